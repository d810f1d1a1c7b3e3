"""The named schedules the experiments run, in one place.

A name is read word by word, so the short names of the Nsight Compute runs ("v2 s3",
"v5 128x256 s4 grouped") and the long names of the clock-probe runs ("v2 128x128x64 s3")
are two spellings of one grammar, and both resolve here:

  [mma loop | load loop]   the kernel's microbenchmark: its loop without the loads (WGMMAs on
                           stages filled once) or without the WGMMAs (loads, waits, syncs)
  v1 .. v7 | v2-local      the preset (`gemm.schedule.preset`); "v2-local" and the word "local"
                           keep V2's phases in a runtime-indexed local array, as the tutorial's
                           V2 compiles; a loop with no version is the V1/V2 ring's
  MxN | MxNxK              the tile (block_m x block_n [x block_k])
  bkK                      block_k
  sS                       ring depth (stages)
  wgW                      W consumer warpgroups
  row | column | grouped   raster order
  prefetch P               the producer keeps at most P loads in flight (KernelConfig.prefetch_limit)
  +NKB smem                launched with N KiB of dynamic shared memory it does not use (fewer
                           CTAs per SM, the same work)
  bf16                     bfloat16 operands (float16 otherwise)

Anything a name leaves out takes the preset's value as it was when the records were taken
(RECORD_PRESETS): the v5 preset has since moved from 128x128 in column order to 128x256 in
grouped order, and "v5 s4" still names the kernel those records measured. A few study labels
that are not in this grammar (the residency study's "v2 s2 @2": V2, 2 stages, padded down to
2 CTAs per SM) are ALIASES of a grammar name. The tuples below are the sets the commands run, in the order they run them:
the Nsight Compute rows of a run follow that order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from gemm.schedule import Schedule, preset

KINDS = ("gemm", "mma", "load")
RASTERS = ("row", "column", "grouped")
# the fields of a preset that changed after records named by it were taken: their old values
RECORD_PRESETS = {"v5": {"block_m": 128, "block_n": 128, "raster": "column"}}


@dataclass(frozen=True)
class Entry:
    """A named kernel: its schedule, which loop it runs (`kind`), and how it is launched."""

    schedule: Schedule
    kind: str = "gemm"               # "gemm"; "mma": the loop without its loads; "load": without its WGMMAs
    pad_bytes: int = 0               # unused dynamic shared memory per CTA
    prefetch_limit: int | None = None  # loads in flight the producer keeps (None: the ring's depth)
    dtype: str = "float16"           # the operands' type ("bf16" in the name: bfloat16)

    def kernel_config(self, dtype: str | None = None, clock_probe: bool = False):
        """The KernelConfig that builds this kernel for a K-major A and B (the seed's layout:
        B stored [N, K]), of the entry's dtype unless `dtype` says otherwise. Imports the
        kernels (numba) only when called."""
        from gemm.kernels import KernelConfig
        return KernelConfig(self.schedule, dtype or self.dtype, "k", "k", clock_probe=clock_probe,
                            mma_loop_only=self.kind == "mma", load_loop_only=self.kind == "load",
                            prefetch_limit=self.prefetch_limit)


_TILE = re.compile(r"(\d+)x(\d+)(?:x(\d+))?")
_VERSION = re.compile(r"v\d(-local)?")


def entry(name: str) -> Entry:
    """The kernel a catalog name (or an ALIASES label) stands for; ValueError if it is not one."""
    name = ALIASES.get(name, name)
    words = name.split()
    kind = "gemm"
    if words[:2] in (["mma", "loop"], ["load", "loop"]):
        kind, words = words[0], words[2:]
    version = "v2" if kind != "gemm" else None
    over: dict = {}
    pad = 0
    prefetch = None
    dtype = "float16"
    i = 0
    while i < len(words):
        w = words[i]
        if _VERSION.fullmatch(w) and i == 0:
            version = w.removesuffix("-local")
            if w.endswith("-local"):
                over["phase_storage"] = "local"
        elif m := _TILE.fullmatch(w):
            over["block_m"], over["block_n"] = int(m[1]), int(m[2])
            if m[3]:
                over["block_k"] = int(m[3])
        elif re.fullmatch(r"bk\d+", w):
            over["block_k"] = int(w[2:])
        elif re.fullmatch(r"s\d+", w):
            over["stages"] = int(w[1:])
        elif re.fullmatch(r"wg\d", w):
            over["consumer_warpgroups"] = int(w[2:])
        elif w == "local":
            over["phase_storage"] = "local"
        elif w == "bf16":
            dtype = "bfloat16"
        elif w in RASTERS:
            over["raster"] = w
        elif w == "prefetch" and i + 1 < len(words) and words[i + 1].isdigit():
            prefetch = int(words[i + 1])
            i += 1
        elif re.fullmatch(r"\+\d+KB", w) and i + 1 < len(words) and words[i + 1] == "smem":
            pad = int(w[1:-2]) * 1024
            i += 1
        else:
            raise ValueError(f"{name!r}: cannot read {w!r} (catalog names: see experiments/catalog.py)")
        i += 1
    if version is None:
        raise ValueError(f"{name!r}: a kernel name starts with its version (v1 .. v7)")
    over = {**RECORD_PRESETS.get(version, {}), **over}
    return Entry(preset(version, **over), kind, pad, prefetch, dtype)


def schedule(name: str) -> Schedule:
    """The schedule a catalog name stands for."""
    return entry(name).schedule


def schedules(names) -> dict[str, Schedule]:
    """{name: schedule} for the names, in their order."""
    return {n: schedule(n) for n in names}


# The GEMMs whose DRAM bytes Nsight Compute measured (experiments.research.hbm_bytes, in this
# order), also the kernels most studies launch.
GEMMS = ("v1", "v2", "v2-local", "v2 s3", "v2 s4", "v3 s2", "v3 s3", "v3 s4", "v4 s2", "v5 s3", "v5 s4",
         "v5 128x256 s4", "v5 128x256 s4 grouped", "v1 128x192", "v2 128x192 s2", "v1 64x256",
         "v2 64x256 s2", "v2 64x256 s2 row")

# The kernels whose SM clock the clock probe reads (python -m experiments.calibrate_clock).
CLOCK_PROBED = ("v1 128x128x64", "v2 128x128x64 s2", "v2 128x128x64 s2 local", "v2 128x128x64 s3",
                "v2 128x128x64 s4", "v1 128x192x64", "v2 128x192x64 s2", "v1 64x256x64", "v2 64x256x64 s2",
                "v1 64x128x64", "v2 128x128x32 s2", "v1 64x128x16", "v3 128x128x64 s2", "v3 128x128x64 s3",
                "v3 128x128x64 s4", "v3 128x128x64 s5", "v3 128x128x64 s6", "v2 128x128x64 s6",
                "v4 128x128x64 s2", "v4 128x128x64 s3", "v5 128x128x64 s3", "v5 128x128x64 s4",
                "v5 128x256x64 s3")

# The V1/V2 loop with its loads taken out, at 3, 2 and 1 CTAs per SM; then the warp-specialized
# loop (no syncs; wait_group(0) for V3 and V4, (1) for V5).
MMA_LOOPS = ("mma loop 128x128x64 s2", "mma loop 128x128x64 s3", "mma loop 128x128x64 s4",
             "mma loop 128x192x64 s2", "mma loop 64x128x64 s2", "mma loop v3 128x128x64 s2",
             "mma loop v3 128x128x64 s4", "mma loop v4 128x128x64 s4", "mma loop v5 128x128x64 s3",
             "mma loop v5 128x128x64 s4")

# The warp-specialized loop without its loads on the small grids' tiles (one CTA an SM, as a
# grid smaller than the GPU runs them): 64 and 128 deep K tiles, each K tile's WGMMA group
# waited for (V3, V4) or one kept in flight (V5). What a K tile costs the consumers beyond its
# WGMMAs' throughput: the tensor pipe's latency, which a short group waited out exposes.
MMA_LOOPS_SMALL_TILES = (
    "mma loop v3 64x64x64 s8", "mma loop v3 64x64x128 s4", "mma loop v5 64x64x64 s8 wg1",
    "mma loop v5 64x64x128 s4 wg1", "mma loop v3 64x128x64 s8", "mma loop v3 64x128x128 s4",
    "mma loop v5 64x128x64 s8 wg1", "mma loop v5 64x128x128 s4 wg1", "mma loop v4 128x64x64 s8",
    "mma loop v4 128x64x128 s4", "mma loop v4 128x128x64 s4", "mma loop v4 128x128x128 s3",
    "mma loop v5 128x128x64 s4", "mma loop v5 128x256x64 s3")

# The V2 loop with its WGMMAs taken out (the load side alone); raster order on the load side
# alone; then the warp-specialized handshake (the producer loads, the consumers hand each
# stage back). Column order unless named "row".
LOAD_LOOPS = ("load loop 128x128x64 s1", "load loop 128x128x64 s2", "load loop 128x128x64 s3",
              "load loop 128x128x64 s4", "load loop 128x192x64 s2", "load loop 64x128x64 s2",
              "load loop 128x128x16 s2", "load loop 128x192x64 s2 row", "load loop 64x128x64 s2 row",
              "load loop 64x256x64 s2", "load loop 64x256x64 s2 row", "load loop v3 128x128x64 s2",
              "load loop v3 128x128x64 s3", "load loop v3 128x128x64 s4", "load loop v3 128x128x64 s6")

# V3 at one CTA per SM: the loads in flight of a shallow ring in the shared memory of a deep
# one, against the deep and shallow rings themselves.
PREFETCH = ("v3 128x128x64 s6 prefetch 3", "v3 128x128x64 s6 prefetch 4", "v3 128x128x64 s6",
            "v3 128x128x64 s4", "v3 128x128x64 s4 prefetch 2", "v3 128x128x64 s3")

# The seed's 128x128x64 tile: each version at its preset depth, V3 and V4 deeper too, and the
# tutorial's V2 with its phase array in local memory.
SEED_CASE = ("v1", "v2", "v2-local", "v3", "v3 s3", "v3 s4", "v4", "v4 s4", "v5")

# Study labels outside the grammar. The residency study (which rings lose their L2 reuse,
# experiments.research.activity.RESIDENCY): "v2 s2 @2" is V2 at 2 stages padded with unused
# shared memory down to 2 CTAs per SM.
ALIASES = {
    "v2 s2 @3": "v2 s2", "v2 s2 @2": "v2 s2 +32KB smem", "v2 s2 @1": "v2 s2 +64KB smem",
    "v2 s3 @2": "v2 s3", "v2 s3 @1": "v2 s3 +32KB smem", "v2 s4 @1": "v2 s4", "v2 s6 @1": "v2 s6",
    "v3 s2 @2": "v3 s2", "v3 s2 @1": "v3 s2 +64KB smem", "v3 s3 @2": "v3 s3",
    "v3 s3 @1": "v3 s3 +32KB smem", "v3 s6 @1": "v3 s6",
}
