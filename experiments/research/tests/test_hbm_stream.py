"""CPU test of experiments/research/hbm_stream.py's summary, on run 103's committed record
(docs/research/notes.md 130), and of the profile parameters it set."""
import json

import pytest

from experiments.paths import logs_dir
from experiments.research import hbm_stream
from sim.hardware import PROFILES_DIR, load_profile

DUMP = logs_dir() / "bench" / "run103-hbm-stream.npz"


def test_summary_of_run103():
    r = hbm_stream.summarize(DUMP)
    assert [c["name"] for c in r["cases"]] == [case[0] for case in hbm_stream.CASES]
    assert all(c["rel_err"] < 1e-3 for c in r["cases"])
    # one line of time against bytes holds the kernel from K 2048 to 16384 ...
    series = [c for c in r["cases"] if c["name"].startswith(hbm_stream.STREAM_SERIES) and "half" not in c["name"]]
    assert len(series) == 4 and all(abs(c["over_fit"]) < 0.01 for c in series)
    # ... and the other full-grid rings at 4+ stages within 2%: their bytes in flight (4-25 MiB) set no rate
    by = {c["name"]: c for c in r["cases"]}
    for name in ("64x256 s3", "64x256 bk128 s2", "64x128 s2", "64x128 s4", "64x128 s8", "swap 192x16 s4",
                 "swap 192x16 s8"):
        assert abs(by[name]["over_fit"]) < 0.02, name
    # where the per-SM ring is the limit, the line is not: 33 CTAs, or half the SMs with 2 stages
    assert by["64x128 s8 no split"]["over_fit"] > 0.5 and by["64x256 s2 half grid"]["over_fit"] > 0.3
    assert 4200 < r["stream_gb_per_s"] < 4600 and 6 < r["fixed_us"] < 10


def test_the_profile_takes_what_run103_measured():
    r = hbm_stream.summarize(DUMP)
    g = load_profile("h200-sxm")
    assert g.hbm_read_efficiency == pytest.approx(r["stream_gb_per_s"] / 1e3 / g.hbm_tbs, abs=0.001)
    assert g.hbm_stream_fixed_us == pytest.approx(r["fixed_us"] - r["model_fixed_us"], abs=0.01)
    provenance = json.loads((PROFILES_DIR / "h200-sxm.json").read_text())["provenance"]
    assert "run103-hbm-stream.npz" in provenance["hbm_read_efficiency"]
