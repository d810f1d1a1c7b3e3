"""Schedule validation: presets are valid, impossible schedules name their limit."""
import subprocess
import sys

import pytest

from gemm.schedule import PRESETS, Schedule, ScheduleError, preset


def test_presets_valid_and_named():
    for name, s in PRESETS.items():
        assert s.validated() is s and s.name == name


def test_seed_case_numbers():
    v2 = preset("v2")
    assert (v2.block_m, v2.block_n, v2.block_k, v2.stages, v2.syncs_per_iter) == (128, 128, 64, 2, 2)
    assert v2.k_iteration_bytes == 32 * 1024
    assert v2.accumulator_registers == 128
    assert preset("v1").stages == 1


@pytest.mark.parametrize("changes,limit", [
    (dict(stages=0), "stages must be >= 1"),
    (dict(stages=8), "227 KB"),
    (dict(block_m=96), "multiple of 64"),
    (dict(block_n=100), "multiple of 8"),
    (dict(block_n=520), "at most 512"),
    (dict(block_n=328), "2 equal WGMMA column block"),   # two blocks of 164: not a multiple of 8
    (dict(block_k=24), "multiple of 16"),
    (dict(block_n=256), "accumulator registers"),
    (dict(block_m=256), "accumulator registers"),
    (dict(wgmma_in_flight=1), "wait for every WGMMA"),
    (dict(raster="diagonal"), "raster"),
    (dict(family="magic"), "family"),
])
def test_invalid_schedules_name_the_limit(changes, limit):
    with pytest.raises(ScheduleError, match=limit):
        preset("v2", **changes)


def test_unknown_version():
    with pytest.raises(ScheduleError, match="unknown version"):
        preset("v9")


def test_stage_capacity_of_seed_tile():
    # 32 KB a stage: 7 stages fit under 227 KB, 8 do not
    preset("v2", stages=7)
    with pytest.raises(ScheduleError):
        preset("v2", stages=8)
    assert Schedule(stages=2).ctas_per_sm() == 3


def test_importing_schedule_or_sim_does_not_import_numba_or_cupy():
    code = ("import sys, gemm, gemm.schedule, sim; "
            "bad = [m for m in ('numba', 'cupy', 'cuda') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_ctas_by_registers_counts_the_four_schedulers():
    """The register file is split among four schedulers: 9 warps of 102 registers fit once,
    though 2 x 9 x 3328 = 59904 < 65536 (what made the first V4/V5 clock probes run at one
    CTA per SM where the kernel runs two); 96 registers fit twice; V1's 154 x 128 three times."""
    from gemm.schedule import ctas_by_registers
    assert ctas_by_registers(96, 288) == 2 and ctas_by_registers(102, 288) == 1
    assert ctas_by_registers(154, 128) == 3 and ctas_by_registers(161, 160) == 2
    assert ctas_by_registers(32, 128) == 16


def test_wide_tiles_are_cut_into_wgmma_column_blocks():
    """A tile wider than one WGMMA (n <= 256) is two equal column blocks a warpgroup; a 128x320
    tile's whole C beside three stages would overflow shared memory, so it stages in two passes."""
    wide = preset("v7", block_n=320)
    assert (wide.n_tiles_per_warpgroup, wide.wgmma_n, wide.wgmmas_per_k_step) == (2, 160, 2)
    assert wide.accumulator_registers == 160
    assert (wide.c_staging_passes, wide.c_staging_cols, wide.c_store_boxes) == (2, 160, 10)
    assert wide.epilogue_bytes == 128 * 160 * 2 and wide.shared_bytes <= 227 * 1024
    v7 = preset("v7")
    assert (v7.n_tiles_per_warpgroup, v7.wgmma_n, v7.c_staging_passes, v7.c_store_boxes) == (1, 256, 1, 4)
    assert preset("v7", block_m=256, block_n=192).c_staging_passes == 2       # 96 KB of C: 222 KB in two
    assert preset("v7", block_n=320, stages=2).c_staging_passes == 1          # two stages leave room
