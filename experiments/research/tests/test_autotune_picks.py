"""What gemm.autotune picks beside the dispatcher's pick (experiments.research.autotune_picks)."""
import math

from experiments.research.autotune_picks import main, summary


def _record(name, pick, winner, times):
    return {"name": name, "pick": pick, "winner": winner, "winner_index": list(times).index(winner),
            "timed_ms": times}


def test_the_winner_over_the_pick_by_autotunes_own_times():
    s = summary([_record("a", "p", "w", {"p": 0.10, "w": 0.08}),
                 _record("b", "p", "p", {"p": 0.05, "x": 0.06}),
                 _record("c", "p", "w", {"w": 0.02, "p": 0.0202})])
    assert [round(r["winner_over_pick"], 3) for r in s["rows"]] == [0.8, 1.0, 0.99]
    assert math.isclose(s["geomean"], (0.8 * 1.0 * (0.02 / 0.0202)) ** (1 / 3))
    assert (s["held"], s["timed"], s["moved"]) == (2, 3, 2)


def test_a_pick_autotune_did_not_time_has_no_ratio():
    s = summary([_record("a", "p", "w", {"w": 0.1, "x": 0.2})])
    assert s["rows"][0]["winner_over_pick"] is None and s["geomean"] is None and s["moved"] == 1


def test_run_219_from_the_committed_record(capsys):
    """Run 219, both off-suite sets: the pick within 3% on 28 of 33, twelve moved."""
    from experiments.paths import REPO
    main(["--summarize", str(REPO / "experiments/results/h200-sxm/logs/bench/run219-autotune.json")])
    out = capsys.readouterr().out
    assert "geomean 0.982; the pick within 3% on 28 of 33; moved 12" in out
