"""The dispatcher's pick beside the other schedules of a round (experiments.research.moved_picks)."""
import math

from experiments.research.moved_picks import geomeans, main, paired


def _row(name, tag, schedule, us, correct="True"):
    return {"name": name, "tag": tag, "schedule": schedule, "ours_b2b_us": str(us), "correct": correct}


def test_pairs_the_pick_with_each_other_schedule_of_its_round():
    rows = [_row("a", "a-r1", "new", 90), _row("a", "a-r1", "old", 100),
            _row("a", "a-r2", "old", 100), _row("a", "a-r2", "new", 95),
            _row("b", "b-r1", "x", 50), _row("b", "b-r1", "y", 40), _row("b", "b-r1", "z", 60, correct="False")]
    pairs = paired(rows, {"a": "new", "b": "x"})
    assert [(p["name"], p["round"], p["other"], round(p["pick_over_other"], 3)) for p in pairs] == [
        ("a", 1, "old", 0.9), ("a", 2, "old", 0.95), ("b", 1, "y", 1.25)]   # z's output was wrong
    g = geomeans(pairs)
    assert math.isclose(g[1], math.sqrt(0.9 * 1.25)) and math.isclose(g[2], 0.95)


def test_a_round_without_the_pick_is_left_out():
    assert paired([_row("a", "a-r1", "old", 100), _row("a", "a-r1", "other", 90)], {"a": "new"}) == []


def test_run_208_from_the_committed_sweeps(capsys):
    """Run 208's merged sweeps: the dispatcher's picks now are the new ones, faster in both rounds."""
    from experiments.paths import REPO
    main(["--suite-file", str(REPO / "experiments/research/shapes-wave-fit.json"),
          "--sweeps", str(REPO / "experiments/results/h200-sxm/logs/bench/run208-sweeps.csv")])
    out = capsys.readouterr().out
    assert "round 1: geomean pick / other back to back 0.894" in out
    assert "round 2: geomean pick / other back to back 0.911" in out
