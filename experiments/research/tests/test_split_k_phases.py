"""CPU tests of experiments/research/split_k_phases.py: the phases it reads off a launch's stamps,
on a synthetic launch whose every phase is known."""
import numpy as np
import pytest

from experiments.research import split_k_phases as skp
from experiments.paths import logs_dir
from gemm.schedule import from_spec
from sim.hardware import load_profile

GHZ = 1.5


def synthetic_launch(ctas: int, units: int, split: int, late_cta: int, late_ns: int) -> np.ndarray:
    """`ctas` CTAs of a split-K kernel, each walking `units` units in the kernel's round robin:
    first load 1 us, K loop 20 us, store and fence 2 us; a slice counts in once every slice of
    its tile has (+0.5 us of handshake), then sums for 1.5 us. CTA `late_cta` starts
    `late_ns` late, so its tile's other slices wait for it."""
    st = np.zeros((ctas, skp.BASE + skp.UNITS * skp.POINTS * 2), dtype=np.int64)
    start = np.array([late_ns if c == late_cta else 0 for c in range(ctas)], dtype=np.int64)
    at = start.copy() + 1000                      # the first unit begins 1 us after the CTA
    times = np.zeros((ctas, units, skp.POINTS), dtype=np.int64)
    for j in range(units):
        arrive = {}
        for c in range(ctas):
            t0 = at[c]
            times[c, j, :4] = [t0, t0 + 1000, t0 + 21000, t0 + 23000]
            arrive[c + j * ctas] = times[c, j, 3]
        for c in range(ctas):
            unit = c + j * ctas
            first = unit - unit % split
            done = max(arrive[p] for p in range(first, first + split)) + 500
            times[c, j, 4] = done
            times[c, j, 5] = done + 1500
            at[c] = done + 1500
    for c in range(ctas):
        st[c, 1] = start[c]
        st[c, 3] = at[c] + 200
        st[c, 0] = int(start[c] * GHZ)
        st[c, 2] = int(st[c, 3] * GHZ)
        for j in range(units):
            for p in range(skp.POINTS):
                word = skp.BASE + (j * skp.POINTS + p) * 2
                st[c, word] = int(times[c, j, p] * GHZ)     # clock64
                st[c, word + 1] = times[c, j, p]            # globaltimer (ns)
    return st


def test_phases_of_a_known_launch():
    st = synthetic_launch(ctas=8, units=2, split=2, late_cta=3, late_ns=4000)
    ph = skp.phases(st, from_spec("v7:block_n=128,stages=4,split_k=2"))
    assert ph["units"] == 2
    assert ph["ghz"] == pytest.approx(GHZ, rel=1e-3)
    assert ph["first_load"] == pytest.approx(1.0, abs=0.01)
    assert ph["k_loop"] == pytest.approx(20.0, abs=0.01)
    assert ph["store_fence"] == pytest.approx(2.0, abs=0.01)
    assert ph["sum"] == pytest.approx(1.5, abs=0.01)
    # every count-in waits 0.5 us past its tile's last arrival, however late that slice was
    assert ph["handshake"] == pytest.approx(0.5, abs=0.01)
    # the late CTA's partner (CTA 2) waits 4 us longer than the handshake: the median CTA does not
    assert ph["wait"] == pytest.approx(0.5, abs=0.01)


def test_a_launch_without_phase_stamps_is_read_as_no_units():
    st = synthetic_launch(ctas=4, units=1, split=2, late_cta=0, late_ns=0)
    st[:, skp.BASE:] = 0
    ph = skp.phases(st, from_spec("v7:block_n=128,stages=4,split_k=2"))
    assert ph["units"] == 0 and np.isnan(ph["k_loop"]) and np.isnan(ph["handshake"])


RECORD = logs_dir() / "bench" / "run107-split-k-phases.npz"


@pytest.mark.skipif(not RECORD.exists(), reason="run 107's record is not in this checkout")
def test_the_profile_carries_run107s_calibration():
    c = skp.calibrate(RECORD)
    g = load_profile("h200-sxm")
    assert c["cases"] == 10
    assert g.split_store_bytes_per_ns == pytest.approx(c["split_store_bytes_per_ns"], abs=0.05)
    assert g.split_sum_bytes_per_ns == pytest.approx(c["split_sum_bytes_per_ns"], abs=0.05)
    assert g.split_sync_us == pytest.approx(c["split_sync_us"], abs=0.005)
    # the handshake itself is about a microsecond on every case: the wait beyond it is skew
    assert 0.9 < c["handshake_us"] < 1.2


@pytest.mark.skipif(not RECORD.exists(), reason="run 107's record is not in this checkout")
def test_run107_split_units_pay_several_microseconds_after_their_k_loop():
    """What the model charged a split unit before (its fp32 stores at the direct epilogue's rate,
    the sum at the GPU's rates) was a fraction of what each CTA spends after its last WGMMA."""
    rows = {(r["name"], r["schedule"]): r for r in skp.summarize(RECORD)}
    big = rows[("k16k-1024", "v7:block_n=128,stages=4,split_k=2")]
    small = rows[("dec1-down", skp.CASES[5][4])]
    assert 5.0 < big["after_loop"] < 7.0 and 2.5 < small["after_loop"] < 3.5
    for r in rows.values():
        assert r["rel_err"] < 1e-3    # every element written, launch after launch


def test_a_cluster_tiles_slices_are_its_ctas():
    """split_cluster: a tile's slices are one cluster's CTAs (consecutive blocks), each at the same
    unit index; the handshake is a CTA's wait done less the last of its cluster's sends."""
    st = synthetic_launch(ctas=4, units=2, split=2, late_cta=1, late_ns=3000)
    ph = skp.phases(st, from_spec("v7:block_n=128,stages=4,split_k=2,split_cluster=true"))
    assert ph["units"] == 2 and ph["handshake"] == pytest.approx(0.5, abs=0.01)


CLUSTER_RECORD = logs_dir() / "bench" / "run112-split-k-phases.npz"


@pytest.mark.skipif(not CLUSTER_RECORD.exists(), reason="run 112's record is not in this checkout")
def test_the_profile_carries_run112s_cluster_calibration():
    """The cluster's terms are run 112's; the workspace's, re-measured in the same run, stay
    within 12% of run 107's, which the profile keeps."""
    c, w = skp.calibrate_cluster(CLUSTER_RECORD), skp.calibrate(CLUSTER_RECORD)
    g = load_profile("h200-sxm")
    expected = {"cluster_exchange_bytes_per_ns": (c, 0.05, 0), "cluster_sum_bytes_per_ns": (c, 0.05, 0),
                "cluster_exchange_sync_us": (c, 0.005, 0), "split_store_bytes_per_ns": (w, None, 0.12),
                "split_sum_bytes_per_ns": (w, None, 0.12), "split_sync_us": (w, None, 0.12)}
    assert c["cases"] == 10
    for key, (fit, abs_, rel) in expected.items():
        assert getattr(g, key) == pytest.approx(fit[key], abs=abs_, rel=rel or None), key


@pytest.mark.skipif(not CLUSTER_RECORD.exists(), reason="run 112's record is not in this checkout")
def test_run112_a_cluster_halves_the_after_loop():
    """Through the cluster's shared memory a split unit's after-loop is about half the workspace's:
    k16k-1024's 128x128 split-2 unit ~6 -> ~3.5 us, dec128-down's 128x64 ~3.9 -> ~2.1."""
    rows = {r["schedule"]: r for r in skp.summarize(CLUSTER_RECORD, model=False)}
    for spec in ("v7:block_n=128,stages=4,split_k=2", "v7:block_n=64,stages=8,split_k=2"):
        ws, cl = rows[spec], rows[spec + ",split_cluster=true"]
        assert cl["after_loop"] < 0.65 * ws["after_loop"], spec
    for r in rows.values():
        assert r["rel_err"] < 1e-3
