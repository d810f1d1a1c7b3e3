"""Predict first: every suite shape x every candidate schedule, written before it is measured.

    python -m experiments.predict --out experiments/results/h200-sxm/predicted-<tag>.csv

One row per (shape, candidate): the model's time for one call as a CUDA-event timing sees it
(`predicted_ms`: host + device, sim/call.py, at the clock of the bench's median run under its
load, sim/load_clock.py), the device time of the call (its kernels back
to back), the time per call when calls run back to back, the GEMM kernel alone, TFLOPS
(from predicted_ms), the model's rank of the candidate for that shape, what the model says
binds, and one call at the clock the schedule earns (the fast path: a second hypothesis).
`candidates(m, n, k, batch)`: the dispatcher's candidates (gemm.dispatch.candidates), the presets v1..v7 and variations of v5 (one producer warp) and v7 (persistent,
clustered, setmaxnreg), each named by its preset and the fields that differ from it
("v7:block_n=192,split_k=2"). `built` says whether a Numba kernel builds it today
(gemm.schedule.kernel_gaps).
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import json
import math
import subprocess
import sys
import time
from pathlib import Path

from .paths import SUITE

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("suite", "name", "m", "n", "k", "batch", "dtype", "schedule", "built", "predicted_ms", "predicted_tflops",
           "predicted_device_ms", "predicted_alone_ms", "predicted_queued_ms", "predicted_kernel_ms", "predicted_rank", "ctas_per_sm",
           "ctas", "units_per_cta", "bound", "gpu", "clock_ghz", "predicted_ms_earned_clock", "earned_clock_ghz",
           "predicted_ms_profile_clock", "kernels", "model_version", "commit", "date")
SM_COUNT = 132


def schedule_name(base: str, s) -> str:
    """The preset's name, then the fields that differ from it: "v7:block_n=192,split_k=2"."""
    from gemm.schedule import PRESETS
    ref = PRESETS[base]
    diff = [f"{f.name}={_fmt(getattr(s, f.name))}" for f in dataclasses.fields(s)
            if f.name != "name" and getattr(s, f.name) != getattr(ref, f.name)]
    return base + (":" + ",".join(diff) if diff else "")


def _fmt(v) -> str:
    return str(int(v)) if isinstance(v, bool) else str(v)


def parse_schedule_name(name: str):
    """The Schedule a name from schedule_name() (or any spec string: "swap_ab=true" as well as
    "swap_ab=1") stands for."""
    from gemm.schedule import from_spec
    return dataclasses.replace(from_spec(name), name=name)


def candidates(m: int, n: int, k: int, batch: int = 1) -> list:
    """Candidate schedules for one shape, valid ones only, each named (schedule_name)."""
    from gemm.schedule import PRESETS, ScheduleError
    out: dict[str, object] = {}

    def add(base: str, **changes):
        try:
            s = PRESETS[base].replace(**changes) if changes else PRESETS[base]
        except ScheduleError:
            return
        name = schedule_name(base, s)
        out.setdefault(name, dataclasses.replace(s, name=name))

    from gemm.dispatch.candidates import candidates as dispatcher_candidates
    for s in dispatcher_candidates(m, n, k, batch):   # what the dispatcher chooses among
        base = s.name.split(":")[0]
        name = schedule_name(base, s)
        out.setdefault(name, dataclasses.replace(s, name=name))
    for v in PRESETS:
        add(v)
    small_m = m <= 64
    # one producer warp, one or two consumer warpgroups (the v3-v5 kernel)
    for bm, bn, wg in ((64, 128, 1), (64, 256, 1), (128, 128, 2), (128, 192, 2), (128, 256, 2), (256, 128, 2)):
        for st in (2, 3, 4, 5, 6):
            add("v5", block_m=bm, block_n=bn, consumer_warpgroups=wg, stages=st, wgmma_in_flight=1,
                raster="grouped")
    # the persistent, clustered kernel (v7) over tiles, depths and clusters
    for bm, bn in ((128, 128), (128, 192), (128, 256), (256, 128)):
        for st in (3, 4, 5, 6):
            for cm in (1, 2):
                add("v7", block_m=bm, block_n=bn, stages=st, cluster_m=cm)
        add("v7", block_m=bm, block_n=bn, stages=4, persistent=False, cluster_m=1)
    # small grids: split K
    tiles = math.ceil(m / 128) * math.ceil(n / 128) * batch
    if tiles < 2 * SM_COUNT:
        for sk in (2, 4, 8):
            for bm, bn in ((128, 128), (128, 256)):
                add("v7", block_m=bm, block_n=bn, stages=4, split_k=sk, cluster_m=1, persistent=False)
                add("v7", block_m=bm, block_n=bn, stages=4, split_k=sk, cluster_m=1)
    # small M: swap A and B so M becomes WGMMA's N (direct epilogue: C leaves transposed)
    if small_m:
        wn = max(16, 1 << max(0, (m - 1).bit_length()))
        for bn in sorted({wn, 64}):
            for bm, wg in ((128, 1), (128, 2), (256, 2)):
                for sk in (1, 2, 4):
                    for st in (4, 6, 8):
                        add("v7", block_m=bm, block_n=bn, consumer_warpgroups=wg, stages=st, swap_ab=True,
                            epilogue="direct", split_k=sk, cluster_m=1, persistent=False,
                            producer_registers=0, consumer_registers=0)
    return list(out.values())


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def predict_shape(shape: dict, gpu: str, fast: bool = False) -> list[dict]:
    """Rows for one shape, every candidate, ranked by predicted_ms."""
    import sim
    from gemm.schedule import kernel_gaps
    from sim.load_clock import calls_before_runs
    m, n, k, batch = shape["m"], shape["n"], shape["k"], shape.get("batch", 1)
    dtype = shape.get("dtype", "float16")
    rows = []
    for s in candidates(m, n, k, batch):
        contenders = 2 if dtype == "bfloat16" else 3   # ours, torch and (not for bf16) cupy: the bench's
        p = (sim.fast_predict if fast else sim.predict)(s, m, n, k, gpu=gpu, dtype=dtype, batch=batch, clock="load",
                                                        load_calls=calls_before_runs(contenders))
        one = sim.fast_predict(s, m, n, k, gpu=gpu, dtype=dtype, batch=batch)
        e = sim.fast_predict(s, m, n, k, gpu=gpu, dtype=dtype, batch=batch, clock="earned")
        rows.append({"suite": shape.get("suite", ""), "name": shape.get("name", ""), "m": m, "n": n, "k": k,
                     "batch": batch, "dtype": dtype, "schedule": s.name, "built": not kernel_gaps(s),
                     "predicted_ms": round(p.timed_ms, 5), "predicted_tflops": round(p.timed_tflops, 1),
                     "predicted_device_ms": round(p.ms, 5), "predicted_alone_ms": round(p.call["alone_ms"], 5),
                     "predicted_queued_ms": round(p.call["queued_ms"], 5),
                     "predicted_kernel_ms": round(p.call["kernel_ms"], 5), "ctas_per_sm": p.ctas_per_sm,
                     "ctas": p.launch["ctas"], "units_per_cta": p.launch["units_per_cta"], "bound": p.bound,
                     "gpu": gpu, "clock_ghz": p.clock_ghz,
                     "predicted_ms_earned_clock": round(e.timed_ms, 5), "earned_clock_ghz": round(e.clock_ghz, 3),
                     "predicted_ms_profile_clock": round(one.timed_ms, 5), "kernels": p.call["kernels"]})
    # ties at the events' host floor broken by the device time, as sim.rank (the dispatcher) orders them
    for i, r in enumerate(sorted(rows, key=lambda r: (r["predicted_ms"], r["predicted_device_ms"]))):
        r["predicted_rank"] = i + 1
    return rows


def _map(shapes: list, gpu: str, fast: bool, jobs: int):
    """predict_shape over the shapes, in suite order, on `jobs` processes (the largest grids first)."""
    if jobs <= 1:
        yield from (predict_shape(s, gpu, fast) for s in shapes)
        return
    from concurrent.futures import ProcessPoolExecutor
    work = sorted(range(len(shapes)), key=lambda i: -shapes[i]["m"] * shapes[i]["n"] * shapes[i].get("batch", 1))
    with ProcessPoolExecutor(jobs) as pool:
        futures = {i: pool.submit(predict_shape, shapes[i], gpu, fast) for i in work}
        for i in range(len(shapes)):
            yield futures[i].result()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.predict", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=str(SUITE), help="shape suite JSON (default: the project's copy, %(default)s)")
    ap.add_argument("--gpu", default="h200-sxm")
    ap.add_argument("--out", required=True, help="CSV to write, e.g. experiments/results/h200-sxm/predicted-<tag>.csv")
    ap.add_argument("--fast", action="store_true", help="the fast path (sim.fast_predict) instead of sim.predict")
    ap.add_argument("--only", help="comma-separated shape names")
    ap.add_argument("--jobs", type=int, default=2, help="processes (default 2); the rows do not depend on it")
    a = ap.parse_args(argv)
    shapes = json.loads(Path(a.suite).read_text())["shapes"]
    if a.only:
        keep = set(a.only.split(","))
        shapes = [s for s in shapes if s["name"] in keep]
    version, sha = _model_version(), commit()
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    t0 = time.time()
    rows = []
    for i, shape_rows in enumerate(_map(shapes, a.gpu, a.fast, a.jobs)):
        rows += shape_rows
        print(f"\r{i + 1}/{len(shapes)} shapes, {len(rows)} rows, {time.time() - t0:.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)
    for r in rows:
        r.update(model_version=version, commit=sha, date=date)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        f.write(f"# predicted by python -m experiments.predict --suite {a.suite} --gpu {a.gpu}"
                f"{' --fast' if a.fast else ''} (model {version}, commit {sha}, {date}); before any measurement of "
                "these rows. predicted_ms: one call between CUDA events (host + device); predicted_device_ms: its "
                "kernels back to back (a dependent launch's hidden under the call before); predicted_alone_ms: its "
                "kernels after an idle GPU; predicted_queued_ms: calls back to back; predicted_kernel_ms: the GEMM "
                "kernel alone (launch included), all at the clock of the bench's median run under its load "
                "(sim/load_clock.py; clock_ghz) and the profile's host (sim/call.py event_ms). TFLOPS from "
                "predicted_ms. Rank 1 = the model's choice. predicted_ms_earned_clock: one call at the clock the "
                "schedule's own activity earns (sim/clock.py; the fast path, per-wave bytes); "
                "predicted_ms_profile_clock: at the profile's one clock (the fast path): two other hypotheses. "
                "kernels: the call's kernels (experiments.score sets predicted_device_ms in a run's own host).\n")
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows for {len(shapes)} shapes to {out} in {time.time() - t0:.1f} s")
    return 0


def _model_version() -> str:
    import sim
    return getattr(sim, "MODEL_VERSION", "unversioned")


if __name__ == "__main__":
    sys.exit(main())
