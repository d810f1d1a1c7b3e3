"""CPU test of experiments/research/fixed_costs.py's summary, on run 31's committed record
(docs/research/notes.md 97), and of the profile parameters it set."""
import json

import pytest

from experiments.paths import logs_dir
from experiments.research import fixed_costs
from sim.hardware import PROFILES_DIR, load_profile

DUMP = logs_dir() / "bench" / "run31-fixed-costs.npz"


def test_summary_of_run31():
    r = fixed_costs.summarize(DUMP)
    assert [c["name"] for c in r["cases"]] == [case[0] for case in fixed_costs.CASES]
    for c in r["cases"]:
        # the stamps' span sits inside the back-to-back time per launch, which sits inside one event pair
        assert 0 < c["span_us"] < c["plain_b2b_us"] <= c["plain_event_us"] + 0.5
        assert 0 <= c["end_min_us"] <= c["span_us"]
    assert r["launch_us"] == pytest.approx(3.0, abs=0.05)
    # a copy of the down-projections' bytes reaches ~85% of the 1 GiB copy's rate, the up-projections' ~92%
    share = {c["name"]: c["bytes"] / c["copy_same_bytes_us"] / 1e3 / r["copy_1gib_gb_per_s"] for c in r["cases"]}
    assert 0.80 < share["dec64-down"] < 0.90 < share["dec64-up"] < 0.97


def test_the_profile_takes_what_run31_measured():
    r = fixed_costs.summarize(DUMP)
    g = load_profile("h200-sxm")
    assert g.launch_us == pytest.approx(round(r["launch_us"], 1))
    assert g.hbm_efficiency == pytest.approx(r["copy_1gib_gb_per_s"] / 1e3 / g.hbm_tbs, abs=0.001)
    provenance = json.loads((PROFILES_DIR / "h200-sxm.json").read_text())["provenance"]
    assert "run31-fixed-costs.npz" in provenance["launch_us"] and "run31-fixed-costs.npz" in provenance["hbm_efficiency"]
