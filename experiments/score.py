"""Predicted against measured over the shape suite: python -m experiments.score

    python -m experiments.score --predicted experiments/results/h200-sxm/predicted-<tag>.csv \
        [--measured experiments/results/h200-sxm/shapes.csv]

Joins each measured row (shapes.csv: suite,name,m,n,k,batch,dtype,schedule,ours_tflops,...) to the
prediction written for the same shape and schedule before it was measured (a schedule named as
experiments.predict names them, "v7:block_n=192,split_k=2", or any name whose Schedule is the
same), and prints for each timing the predictions file carries (one call between CUDA events,
calls back to back, the device alone, one call at the earned clock) the median and 90th-percentile |error| and
the rank correlation over the rows; where a shape has several measured schedules, whether the
model's first choice among the dispatcher's candidates for it is the measured best and by how
much it trails, and the same for the fastest measured of the model's first three (what
gemm.autotune times); where the sweep timed calls back to back too (ours_b2b_us beside
cublas_b2b_us), the model's fastest back to back against the measured best there. Rows whose
schedule has no prediction are listed, not scored.

    python -m experiments.score --predicted P.csv --by-shape \
        --measured experiments/results/h200-sxm/sweep-*.csv

pools the rows timed back to back over every file given (each sweep a run) and prints, per shape,
how far the model's calls back to back are from them: where the model holds and where it does not.
"""
from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from pathlib import Path

from .bench import read_host_probe, row_host_probe

RESULTS = Path(__file__).with_name("results")
TUNED_TOP = 3    # candidates gemm.autotune times by default, the model's fastest first
TIMINGS = {"one call": "predicted_ms", "back to back": "predicted_queued_ms", "device": "predicted_device_ms",
           "earned clock": "predicted_ms_earned_clock", "profile clock": "predicted_ms_profile_clock"}


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(ln for ln in path.read_text().splitlines() if not ln.startswith("#")))


def _key(name: str):
    """A schedule's identity: its fields (any name experiments.predict can parse), else the name."""
    import dataclasses

    from experiments.predict import parse_schedule_name
    try:
        return dataclasses.replace(parse_schedule_name(name), name="")
    except Exception:
        return name


def _speed(row: dict) -> float:
    """A measured row's speed for comparing schedules of one shape: its ratio to the faster
    cuBLAS timed beside it where the sweep timed each schedule with its own baselines (the
    clock, and on small shapes the host, move between one schedule's blocks and the next
    one's; make_table chooses by the same ratio), else its TFLOPS."""
    return float(row.get("ratio") or row["ours_tflops"])


def _is_candidate(row: dict) -> bool:
    """Whether the dispatcher considers the row's schedule for its shape today
    (gemm.dispatch.candidates): the choices are scored among those."""
    from gemm.dispatch.candidates import candidates
    shape = (int(row["m"]), int(row["n"]), int(row["k"]), int(row.get("batch") or 1), row.get("dtype") or "float16")
    return _key(row["schedule"]) in {_key(c.name) for c in candidates(*shape)}


def _spearman(x, y) -> float:
    def ranks(v):
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0.0] * len(v)
        for i, j in enumerate(order):
            r[j] = i
        return r
    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den else float("nan")


RUN_HOST = "one call, this run's host"
ROW_HOST = "one call, each row's host"
# where the rows carry their calls' measured time back to back (shapes.csv's ours_b2b_us), the
# two halves of the one-call error apart: the model's calls back to back against that time, and
# the host's formula (sim.call.event_ms) given the measured time instead of the predicted device time
DEVICE_B2B = "back to back, measured so"
HOST_FORMULA = "one call, each row's host, measured device"


def b2b_predicted_ms(pred: dict, row: dict) -> float:
    """The model's time a call back to back (ms) as the row's timing measured it: from
    make_table.HELD_B2B_SINCE on the GPU waits until the host has queued every call
    (experiments.timing.back_to_back_us), so the calls time the device alone
    (predicted_device_ms); before, the host paced the short calls (predicted_queued_ms: the
    longer of the device's and the host's time)."""
    from .make_table import HELD_B2B_SINCE
    held = (row.get("date") or "") >= HELD_B2B_SINCE
    return float(pred["predicted_device_ms" if held or not pred.get("predicted_queued_ms") else "predicted_queued_ms"])


def alone_device_ms(pred: dict, prof, back_to_back_ms: float | None = None) -> float:
    """A call's device time alone (ms): the prediction's (predicted_alone_ms), or its time back
    to back (the prediction's, or `back_to_back_ms` measured) with the launch a programmatic
    dependent hides under the call before it back to back added again (the profile's
    dependent_launch_saving_us), which one call after an idle GPU cannot hide. Model
    2026.12-dependent-1 took the saving off without writing predicted_alone_ms; models before it
    did not take it off."""
    from gemm.schedule import from_spec
    if back_to_back_ms is None and pred.get("predicted_alone_ms"):
        return float(pred["predicted_alone_ms"])
    b2b = float(pred["predicted_device_ms"]) if back_to_back_ms is None else back_to_back_ms
    took_it_off = "predicted_alone_ms" in pred or pred.get("model_version") == "2026.12-dependent-1"
    dependent = took_it_off and from_spec(pred["schedule"]).dependent_launch
    return b2b + (prof.dependent_launch_saving_us * 1e-3 if dependent else 0.0)


def at_run_host(pred: dict, probe: dict, prof=None, device_ms: float | None = None) -> float:
    """The predicted call (ms) as the events see it with the run's own host (its shapes.csv's
    host_probe: call, floor and pace, measured before the rows) in place of the profile's: the
    model's device time (or `device_ms`), alone (alone_device_ms), through the model's formula
    (sim.call.event_ms), the
    kernel's start at the profile's kernel_start_share of the probe's called_us where the run
    measured it. `prof`: the GPU profile (default: the prediction's)."""
    from sim.call import event_ms
    from sim.hardware import load_profile
    prof = prof or load_profile(pred.get("gpu") or "h200-sxm")
    device = alone_device_ms(pred, prof, device_ms)
    start = prof.kernel_start_share * probe["called_us"] if probe.get("called_us") else None
    return event_ms(device, probe["call_us"], probe["floor_us"], probe["pace_us"],
                    prof.event_tail_us, int(pred["kernels"]) - 1, prof.host_launch_us, start_us=start)


def _predicted_ms(col: str, pred: dict, row: dict, probe, prof) -> float:
    """The prediction `col` (a TIMINGS column or one of the labels above) for a measured row, ms."""
    if col == RUN_HOST:
        return at_run_host(pred, probe, prof)
    if col == ROW_HOST:
        return at_run_host(pred, row_host_probe(row), prof)
    if col == HOST_FORMULA:
        return at_run_host(pred, row_host_probe(row), prof, device_ms=float(row["ours_b2b_us"]) * 1e-3)
    if col == DEVICE_B2B:
        return b2b_predicted_ms(pred, row)
    return float(pred[col])


def _measured_ms(col: str, row: dict, flops: float) -> float:
    if col == DEVICE_B2B:
        return float(row["ours_b2b_us"]) * 1e-3
    return float(row["ours_ms"]) if row.get("ours_ms") else flops / (float(row["ours_tflops"]) * 1e12) * 1e3


def _abs_quantiles(errors: list[float]) -> tuple[float, float]:
    """The median and the 90th percentile of the errors' sizes."""
    a = sorted(abs(e) for e in errors)
    return a[len(a) // 2], a[min(len(a) - 1, int(0.9 * len(a)))]


def _predictions(predicted: Path) -> dict:
    """The predictions file's rows by (shape name, schedule identity)."""
    return {(r["name"], _key(r["schedule"])): r for r in _rows(predicted)}


def score(predicted: Path, measured: Path) -> dict:
    pred = _predictions(predicted)
    joined, missing = [], []
    for r in _rows(measured):
        if not r.get("ours_tflops"):     # refused, or wrong: nothing measured to score
            continue
        p = pred.get((r["name"], _key(r["schedule"])))
        (joined if p else missing).append((r, p))
    out = {"rows": len(joined), "missing": [(r["name"], r["schedule"]) for r, _ in missing], "timings": {}}
    probe = read_host_probe(measured)
    timings = dict(TIMINGS)
    if probe and joined and "kernels" in joined[0][1]:
        out["host_probe"] = probe
        timings[RUN_HOST] = RUN_HOST
        if all(row_host_probe(r) for r, _ in joined):
            timings[ROW_HOST] = ROW_HOST
            if all(r.get("ours_b2b_us") for r, _ in joined):
                timings[HOST_FORMULA] = HOST_FORMULA
    if joined and all(r.get("ours_b2b_us") for r, _ in joined):
        timings[DEVICE_B2B] = DEVICE_B2B
    prof = None
    if joined and RUN_HOST in timings:
        from sim.hardware import load_profile
        prof = load_profile(joined[0][1].get("gpu") or "h200-sxm")
    for label, col in timings.items():
        if joined and col not in joined[0][1] and col not in (RUN_HOST, ROW_HOST, HOST_FORMULA, DEVICE_B2B):
            continue
        meas, model, err = [], [], []
        for r, p in joined:
            flops = 2.0 * int(r["m"]) * int(r["n"]) * int(r["k"]) * int(r.get("batch") or 1)
            ms, measured = _predicted_ms(col, p, r, probe, prof), _measured_ms(col, r, flops)
            meas.append(flops / measured)
            model.append(flops / ms)
            err.append(measured / ms - 1)     # the predicted speed over the measured
        if err:
            median_abs, p90_abs = _abs_quantiles(err)
            out["timings"][label] = {"median_abs": median_abs, "p90_abs": p90_abs,
                                     "spearman": _spearman(meas, model) if len(meas) > 2 else float("nan"),
                                     "errors": {(r["name"], r["schedule"]): e for (r, _), e in zip(joined, err)}}
    choices, tuned, choices_b2b = [], [], []
    by_shape: dict = {}
    for r, p in joined:
        by_shape.setdefault(r["name"], []).append((r, p))
    for name, rows in by_shape.items():
        rows = [rp for rp in rows if _is_candidate(rp[0])]
        if len(rows) < 2:
            continue
        if all(r.get("ours_b2b_us") and r.get("cublas_b2b_us") for r, _ in rows):
            # the same question of the calls back to back: the model's fastest there (b2b_predicted_ms)
            # against the measured best, each measured as its
            # ratio to the cuBLAS timed in the same rounds (the clock moves along a shape's candidates)
            first = min(rows, key=lambda rp: (b2b_predicted_ms(rp[1], rp[0]), float(rp[1]["predicted_device_ms"])))
            b2b = lambda r: float(r["cublas_b2b_us"]) / float(r["ours_b2b_us"])   # noqa: E731
            choices_b2b.append((name, first[0]["schedule"], b2b(first[0]) / max(b2b(r) for r, _ in rows)))
        # the events time every small candidate at the host floor: the device time breaks the tie, as
        # the dispatcher's ranking (sim.rank: host + device) does
        ranked = sorted(rows, key=lambda rp: (float(rp[1]["predicted_ms"]),
                                              float(rp[1].get("predicted_device_ms") or 0)))
        best = max(_speed(r) for r, _ in rows)
        choices.append((name, ranked[0][0]["schedule"], _speed(ranked[0][0]) / best))
        # what gemm.autotune does: time the model's TUNED_TOP fastest, keep the fastest measured
        timed = max(ranked[:TUNED_TOP], key=lambda rp: _speed(rp[0]))
        tuned.append((name, timed[0]["schedule"], _speed(timed[0]) / best))
    out["choices"], out["tuned"], out["choices_b2b"] = choices, tuned, choices_b2b
    return out


def b2b_errors(predicted: Path, measured: list[Path]) -> list[tuple[str, str, float]]:
    """Every correct row timed back to back (ours_b2b_us) in the `measured` files against the
    model's calls back to back for it (b2b_predicted_ms): (shape, schedule, the predicted speed
    over the measured, less 1, as score's errors: negative where the model is slow)."""
    pred = _predictions(predicted)
    out = []
    for path in measured:
        for r in _rows(path):
            if not r.get("ours_b2b_us") or r.get("correct") in ("False", "false"):
                continue
            p = pred.get((r["name"], _key(r["schedule"])))
            if p is not None:
                error = _measured_ms(DEVICE_B2B, r, 0.0) / _predicted_ms(DEVICE_B2B, p, r, None, None) - 1
                out.append((r["name"], r["schedule"], error))
    return out


def _abs_summary(errors: list[float]) -> str:
    median_abs, p90_abs = _abs_quantiles(errors)
    return f"median |error| {100 * median_abs:5.1f}%  p90 {100 * p90_abs:5.1f}%"


def print_by_shape(predicted: Path, measured: list[Path]) -> None:
    rows = b2b_errors(predicted, measured)
    print(f"{len(rows)} rows timed back to back with a prediction, from {len(measured)} files: "
          f"{_abs_summary([e for _, _, e in rows]) if rows else 'none'}")
    by_shape: dict = {}
    for name, _, e in rows:
        by_shape.setdefault(name, []).append(e)
    for name, errs in sorted(by_shape.items()):
        print(f"  {name:16s} {len(errs):4d} rows  median {100 * statistics.median(errs):+6.1f}%  "
              f"range {100 * min(errs):+6.1f}% .. {100 * max(errs):+6.1f}%  {_abs_summary(errs)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.score", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--predicted", required=True)
    ap.add_argument("--measured", nargs="+", default=[str(RESULTS / "h200-sxm" / "shapes.csv")],
                    help="one results CSV (several with --by-shape)")
    ap.add_argument("--by-shape", action="store_true",
                    help="pool the rows timed back to back over every --measured file, per shape")
    a = ap.parse_args(argv)
    if a.by_shape:
        print_by_shape(Path(a.predicted), [Path(m) for m in a.measured])
        return 0
    if len(a.measured) > 1:
        ap.error("several --measured files are pooled only with --by-shape")
    res = score(Path(a.predicted), Path(a.measured[0]))
    print(f"{res['rows']} measured rows with a prediction written before them; {len(res['missing'])} without")
    for name, sched in res["missing"]:
        print(f"  no prediction: {name} {sched}")
    for label, t in res["timings"].items():
        print(f"{label:13s} median |error| {100 * t['median_abs']:5.1f}%  p90 {100 * t['p90_abs']:5.1f}%  "
              f"rank correlation {t['spearman']:.3f}")
    if "one call" in res["timings"]:
        for (name, sched), e in sorted(res["timings"]["one call"]["errors"].items(), key=lambda kv: -abs(kv[1]))[:10]:
            print(f"  {100 * e:+6.1f}%  {name:14s} {sched}")
    if res["choices"]:
        for key, what in (("choices", "model's first choice"),
                          ("tuned", f"fastest measured of the model's first {TUNED_TOP}"),
                          ("choices_b2b", "model's first choice back to back")):
            if not res[key]:
                continue
            g = math.exp(statistics.mean(math.log(x) for _, _, x in res[key]))
            print(f"{what} among the measured schedules: geomean {g:.3f} of the measured best, "
                  f"best on {sum(x >= 1 for _, _, x in res[key])} of {len(res[key])} shapes, "
                  f"within 3% on {sum(x >= 0.97 for _, _, x in res[key])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
