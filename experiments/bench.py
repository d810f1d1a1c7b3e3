"""The benchmark: gemm.matmul against the faster of torch.matmul (cuBLASLt) and cupy.matmul
(cuBLAS) over the public shape suite, and the version ladder at 8192^3.

  python -m experiments.bench                    # the suite and the ladder -> shapes.csv, ladder.csv
  python -m experiments.bench --suite            # only the suite
  python -m experiments.bench --ladder           # only the ladder (v1..v7 at 8192^3)
  python -m experiments.bench --shapes sq4096,llama7b-qkv   # a subset of the suite, by name
  python -m experiments.bench --suite --suite-file experiments/shapes-offsuite.json --tag offsuite
                                                 # shapes the table and the model never saw
  python -m experiments.bench --schedule v7      # every suite shape on one preset, not the default
  python -m experiments.bench --sweep "v7;v7:block_n=192" --shapes sq4096   # candidates -> sweep.csv
  python -m experiments.bench --sweep "PICK;packed:PICK;packed:" --shapes dec16-down --tag packed
                                                 # ... with the weights packed (gemm.pack_weights):
                                                 # 'packed:' alone is the dispatcher's choice for them
  python -m experiments.bench --candidates --tag candidates-N   # every shape's dispatcher candidates
  python -m experiments.bench --check            # the ladder again: fail if a preset's ratio to
                                                 # cuBLAS falls more than 10% below ladder.csv's

Each row: fresh random inputs (C of unit variance), A [M, K] row-major and B = W.T for a
weight W [N, K], as the suite says; our output (poisoned with NaN first) checked against a
float64 reference, every element; then, after the GPU has rested (--rest, 4 s: each suite row's
clock starts as a rested GPU's, whatever row came before), ours, torch.matmul and cupy.matmul on the same
inputs, each alone in blocks (experiments.timing.time_blocks: 5 warm-up runs, 10 rounds of
3 CUDA-event-timed runs, the contenders' blocks alternating, their order turning each round), the median. ratio = ours over
the faster of torch and cupy (cupy has no bf16: torch alone there). Then each contender's
calls back to back (ours_b2b_us, cublas_b2b_us: experiments.timing.back_to_back_rounds, the
GPU held until the host has queued the calls, the contenders in turn over three rounds; for the decode rows their bytes per second as
a share of a copy's, b2b_hbm_share, beside the one-call hbm_share; a sweep's rows carry the
two times too). Before and after the
suite's rows, the host's floor, pace and call time under the same events
(experiments.timing.host_probe) go into shapes.csv's header: experiments.score sets the
model's predictions in this host. Needs the H200.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from gemm.schedule import PRESETS, from_spec

from .paths import SUITE, read_rows, results_dir
from .timing import back_to_back_rounds, host_probe, time_blocks, tflops

RESULTS = results_dir()
SHAPE_COLUMNS = ["suite", "name", "m", "n", "k", "batch", "dtype", "schedule", "ours_tflops", "torch_tflops",
                 "cupy_tflops", "ratio", "correct", "rel_err", "ours_ms", "torch_ms", "cupy_ms", "gb_per_s",
                 "hbm_share", "host_call_us", "host_floor_us", "host_pace_us", "host_called_us", "ours_run_us", "torch_run_us",
                 "ours_b2b_us", "cublas_b2b_us", "b2b_gb_per_s", "b2b_hbm_share", "gpu", "date"]
LADDER_COLUMNS = ["version", "schedule", "tflops", "torch_tflops", "cupy_tflops", "ratio", "correct", "rel_err",
                  "ms", "date"]
SWEEP_COLUMNS = ["name", "m", "n", "k", "batch", "dtype", "schedule", "ours_tflops", "torch_tflops",
                 "cupy_tflops", "ratio", "correct", "rel_err", "ours_b2b_us", "cublas_b2b_us", "date"]
LADDER_SHAPE = (8192, 8192, 8192)
REGRESSION = 0.10   # --check fails below (1 - this) x the committed ratio


def suite_shapes(names=None, suite: Path = SUITE) -> list[dict]:
    shapes = json.loads(Path(suite).read_text())["shapes"]
    for s in shapes:
        s.setdefault("batch", 1)
        s.setdefault("dtype", "float16")
    if names:
        wanted = set(names)
        unknown = wanted - {s["name"] for s in shapes}
        if unknown:
            raise SystemExit(f"unknown shape(s) {sorted(unknown)}; the suite has "
                             f"{', '.join(s['name'] for s in shapes)}")
        shapes = [s for s in shapes if s["name"] in wanted]
    return shapes


def _operands(shape, seed):
    """A [batch?, M, K] and B = W.T for W [batch?, N, K], scaled so C has unit variance."""
    import torch
    m, n, k, batch, dtype = shape["m"], shape["n"], shape["k"], shape["batch"], shape["dtype"]
    g = torch.Generator(device="cuda").manual_seed(seed)
    lead = (batch,) if batch > 1 else ()
    scale = float(k) ** -0.25
    dt = getattr(torch, dtype)
    a = (torch.randn(lead + (m, k), generator=g, device="cuda") * scale).to(dt)
    w = (torch.randn(lead + (n, k), generator=g, device="cuda") * scale).to(dt)
    return a, w.transpose(-1, -2)


def _relative_error(c, ref) -> float:
    import torch
    if not torch.isfinite(c).all():
        return math.inf
    return float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))


def _tolerance(dtype, schedule) -> float:
    from .reference import TOLERANCE
    if schedule.accumulate == "float16":
        return 1e-2   # fp16 accumulators round every partial sum (tests/test_gpu_persistent.py)
    return TOLERANCE[dtype]


@dataclass(frozen=True)
class Packed:
    """A sweep entry that reads the weights packed (gemm.pack_weights): `schedule`, or None for the
    dispatcher's choice. Its rows' schedule column reads 'packed:NAME' (not a table source)."""
    schedule: object = None


def sweep_entry(spec: str):
    """A --sweep item: a schedule spec, or 'packed:' and an optional spec."""
    if spec.startswith("packed:"):
        rest = spec[len("packed:"):]
        return Packed(from_spec(rest) if rest else None)
    return from_spec(spec)


def measure_shape(shape, schedules, seed=0, input_sets=3, baselines_each=False, rest_s=0.0,
                  probe_host=False, back_to_back=False) -> list[dict]:
    """One row per schedule (None: the dispatcher's choice) at one shape. Each is checked
    first (NaN-poisoned output against one float64 reference, every element); then every
    correct schedule, torch.matmul and cupy.matmul are timed in one time_blocks call, so
    their blocks alternate and the baselines are timed once for all. `baselines_each`: each
    schedule in a time_blocks call of its own with torch and cupy, so its ratio compares
    runs made in the same stretch of time: the clock of a power-limited GPU rises after a
    schedule that draws little power and sags after one that draws much, and a sweep of
    many schedules would otherwise favour the ones that follow light ones. `rest_s`: seconds
    the GPU rests after the checks, before the timing, so that the row's clock starts where a
    rested GPU's does, whatever row came before it (the power limit's budget, sim/load_clock.py).
    `probe_host`: the host's call, floor and pace (suite_host_probe) just before the timing, in
    the row's host_*_us columns: the host's pace drifts within one process (1.8x over one suite
    in run 59), so each row carries the host it was timed on. `back_to_back`: after the timing,
    every contender's calls back to back, the contenders in turn over rounds (experiments.timing.
    back_to_back_rounds), the device's time per call when the host keeps ahead of it: ours_b2b_us,
    cublas_b2b_us (the faster of torch and cupy) and the bytes per second that makes
    (b2b_gb_per_s), which a one-call timing of a kernel shorter than the host's pace cannot show."""
    import torch

    import gemm
    m, n, k, batch, dtype = shape["m"], shape["n"], shape["k"], shape["batch"], shape["dtype"]
    # several input sets while they are small next to the 60 MB L2, so no run starts warm
    footprint = 2 * batch * (m * k + k * n + m * n)
    sets = [_operands(shape, seed + i) for i in range(input_sets if footprint < 256e6 else 1)]
    a, b = sets[0]
    ref = a.double() @ b.double()
    base = {key: shape[key] for key in ("suite", "name", "m", "n", "k", "batch", "dtype") if key in shape}
    rows, timed = [], {}
    # the weights packed once per input set, for the entries that read them so
    packs = ({id(y): gemm.pack_weights(y) for _, y in sets} if any(isinstance(e, Packed) for e in schedules)
             else {})
    for i, entry in enumerate(schedules):
        row = dict(base)
        packed = isinstance(entry, Packed)
        schedule = entry.schedule if packed else entry
        weights = (lambda y: packs[id(y)]) if packed else (lambda y: y)
        try:
            chosen = schedule or gemm.plan(a, weights(b)).schedule
            row["schedule"] = ("packed:" if packed else "") + chosen.name
            c = torch.full(ref.shape, float("nan"), dtype=a.dtype, device="cuda")
            gemm.matmul(a, weights(b), schedule=schedule, out=c)
            torch.cuda.synchronize()
            err = _relative_error(c, ref)
            del c
            row.update(rel_err=f"{err:.2e}", correct=bool(err < _tolerance(dtype, chosen)))
            if row["correct"]:
                timed[f"ours{i}"] = lambda x, y, s=schedule, w=weights: gemm.matmul(x, w(y), schedule=s)
        except (ValueError, TypeError, NotImplementedError) as exc:   # a shape our API refuses
            row.update(schedule=row.get("schedule", ""), correct=False, rel_err=f"refused: {exc}"[:200])
        rows.append(row)
    del ref
    baselines = cublas_contenders(dtype)
    if rest_s:
        torch.cuda.synchronize()
        time.sleep(rest_s)
    host = {f"host_{key}": f"{val:.2f}" for key, val in suite_host_probe().items()} if probe_host else {}
    # per_row and paces (the host's time per timed run, by contender) of each schedule's timing
    if baselines_each:
        paces = {name: {} for name in timed}
        per_row = {name: time_blocks({name: fn, **baselines}, sets, host_us=paces[name]) for name, fn in timed.items()}
    else:
        shared: dict = {}
        ms_all = time_blocks({**timed, **baselines}, sets, host_us=shared)
        per_row, paces = {name: ms_all for name in timed}, {name: shared for name in timed}
    # a row that was not timed (incorrect or refused) still reports the baselines
    untimed = next(iter(per_row.values())) if per_row else time_blocks(baselines, sets)
    flop_ms = lambda t: tflops(m, n, k, t) * batch  # noqa: E731
    for i, row in enumerate(rows):
        row.update(host)
        ms = per_row.get(f"ours{i}", untimed)
        best = min(ms[name] for name in baselines)
        for name in ("torch", "cupy"):
            row[f"{name}_ms"] = f"{ms[name]:.4f}" if name in ms else ""
            row[f"{name}_tflops"] = f"{flop_ms(ms[name]):.1f}" if name in ms else ""
        pace = paces.get(f"ours{i}", {})
        if pace:   # the pace the events saw: what the host probe stands for in the model's input
            row.update(ours_run_us=f"{pace[f'ours{i}']:.2f}", torch_run_us=f"{pace['torch']:.2f}")
        t = ms.get(f"ours{i}")
        if t is not None:
            row.update(ours_ms=f"{t:.4f}", ours_tflops=f"{flop_ms(t):.1f}", ratio=f"{best / t:.3f}",
                       gb_per_s=f"{footprint / (t * 1e-3) / 1e9:.0f}")   # A, B and C moved once
    if back_to_back and timed:
        # the calls back to back in rounds whose order turns, as the one-call blocks are: with
        # `baselines_each`, each schedule with its own torch and cupy (a clock that recovers after
        # a schedule that draws little power favours whatever runs next: run 99, notes item 127)
        groups = ([{name: fn, **baselines} for name, fn in timed.items()] if baselines_each
                  else [{**timed, **baselines}])
        for group in groups:
            b2b = back_to_back_rounds(group, sets)
            cublas_us = min(b2b[name] for name in baselines)
            for name in group.keys() - baselines.keys():
                ours_us = b2b[name]
                rows[int(name[len("ours"):])].update(
                    ours_b2b_us=f"{ours_us:.2f}", cublas_b2b_us=f"{cublas_us:.2f}",
                    b2b_gb_per_s=f"{footprint / (ours_us * 1e-6) / 1e9:.0f}")
    return rows


def hbm_copy_gb_per_s(nbytes: int = 1 << 30) -> float:
    """The HBM's copy rate as a kernel sees it: a device-to-device copy of `nbytes` (torch's
    copy_), bytes read plus bytes written over the median time of the timing protocol's blocks.
    What the decode rows' bytes per second are a share of."""
    import torch
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = time_blocks({"copy": lambda s, d: d.copy_(s)}, [(src, dst)])["copy"]
    return 2 * nbytes / (ms * 1e-3) / 1e9


ROW_REST_S = 4.0   # a rested GPU's clock budget back (the clock-transient microbenchmark rests 4 s)
HOST_PROBE_KEY = "host_probe"
HOST_PROBE_WHAT = ("experiments.timing.host_probe: gemm.matmul at 64^3 in a row's loop with torch and cupy, before "
                   "the suite, microseconds; each row's own, just before its timing, in its host_*_us columns")


def suite_host_probe() -> dict:
    """The host's floor, pace and call time under the protocol's events (experiments.timing.
    host_probe) on this machine, measured before the suite's rows: what experiments.score
    reads to set the model's device times in this run's host."""
    import gemm
    from experiments.reference import random_operands
    a, b = random_operands(64, 64, 64, "float16", seed=0)
    return host_probe(lambda x, y: gemm.matmul(x, y), (a, b), rivals=cublas_contenders("float16"))


def cublas_contenders(dtype: str) -> dict:
    """What ours is timed against: torch.matmul (cuBLASLt) and, but for bf16 (CuPy has none),
    cupy.matmul (cuBLAS) on the same tensors."""
    import cupy
    import torch
    contenders = {"torch": torch.matmul}
    if dtype != "bfloat16":
        contenders["cupy"] = lambda x, y: cupy.matmul(cupy.from_dlpack(x), cupy.from_dlpack(y))
    return contenders


def row_host_probe(row: dict) -> dict | None:
    """The host probe a shapes.csv row carries ({call_us, floor_us, pace_us}, and called_us
    where the run measured it), or None."""
    keys = ("call_us", "floor_us", "pace_us")
    if all(row.get(f"host_{k}") for k in keys):
        return {k: float(row[f"host_{k}"]) for k in keys + ("called_us",) if row.get(f"host_{k}")}
    return None


def read_host_probe(path: Path) -> dict | None:
    """The host probe a shapes.csv's header carries ({call_us, floor_us, pace_us}), or None."""
    for line in Path(path).read_text().splitlines():
        if not line.startswith("#"):
            break
        if line.startswith(f"# {HOST_PROBE_KEY}:"):
            words = line.split(":", 1)[1].split("(")[0].split()
            return {k: float(v) for k, v in (w.split("=") for w in words)}
    return None


def _provenance() -> dict:
    from .measure import provenance
    return provenance()


PROTOCOL = ("correctness first (NaN-poisoned output, float64 reference, every element); then ours, "
            "torch.matmul and cupy.matmul on the same inputs, each alone: 5 warm-up runs, 10 rounds of 3 "
            "CUDA-event-timed runs, blocks alternating, their order turning each round; the median. ratio = faster of torch and cupy / ours")
SWEEP_PROTOCOL = PROTOCOL + ("; a sweep times each schedule with its own torch and cupy blocks, so every ratio "
                             "compares runs from the same stretch of the GPU's clock; then each schedule's calls "
                             "back to back with its own torch's and cupy's (ours_b2b_us, cublas_b2b_us: 20 calls "
                             "between one event pair after 3, the GPU held by a spin kernel until the host has "
                             "queued them, in 3 rounds whose order turns, the median)")


def _write(path: Path, columns, rows, meta, command, protocol=PROTOCOL):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write(f"# measured by {command}\n")
        for key, val in meta.items():
            f.write(f"# {key}: {val}\n")
        f.write(f"# protocol: {protocol}\n")
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def ladder_rows() -> list[dict]:
    m, n, k = LADDER_SHAPE
    shape = {"name": "ladder", "m": m, "n": n, "k": k, "batch": 1, "dtype": "float16"}
    versions = sorted(PRESETS)
    rows = measure_shape(shape, [PRESETS[v] for v in versions], seed=17)
    return [{"version": v, "schedule": r["schedule"], "tflops": r.get("ours_tflops", ""),
             "torch_tflops": r["torch_tflops"], "cupy_tflops": r["cupy_tflops"], "ratio": r.get("ratio", ""),
             "correct": r["correct"], "rel_err": r["rel_err"], "ms": r.get("ours_ms", "")}
            for v, r in zip(versions, rows)]


def check(rows, committed) -> list[str]:
    """Presets whose ratio to cuBLAS fell more than REGRESSION below the committed figure."""
    before = {r["version"]: r for r in committed}
    failures = []
    for r in rows:
        old = before.get(r["version"])
        if not old or not old.get("ratio"):
            continue
        if not r["correct"] or not r["ratio"] or float(r["ratio"]) < (1 - REGRESSION) * float(old["ratio"]):
            failures.append(f"{r['version']}: ratio {r['ratio'] or 'n/a'} (correct={r['correct']}) against "
                            f"{old['ratio']} committed")
    return failures


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", action="store_true", help="only the shape suite")
    p.add_argument("--ladder", action="store_true", help="only the version ladder at 8192^3")
    p.add_argument("--check", action="store_true", help="re-measure the ladder against the committed ladder.csv")
    p.add_argument("--shapes", type=lambda s: s.split(","), help="suite shapes by name, comma-separated")
    p.add_argument("--suite-file", type=Path, default=SUITE,
                   help="the shape list, in shapes.json's format (default: %(default)s; "
                        "experiments/shapes-offsuite.json holds shapes the table and the model never saw)")
    p.add_argument("--schedule", type=from_spec, help="one schedule for every shape (default: the dispatcher's)")
    p.add_argument("--sweep", type=lambda s: [sweep_entry(x) for x in s.split(";")],
                   help="candidate schedules separated by ';' (e.g. 'v7;v7:block_n=192'), each on every shape; "
                        "'packed:SPEC' reads the weights packed (gemm.pack_weights), 'packed:' alone with the "
                        "dispatcher's choice for them")
    p.add_argument("--candidates", action="store_true",
                   help="sweep each shape over the dispatcher's candidates for it (what make_table reads)")
    p.add_argument("--rest", type=float, default=ROW_REST_S,
                   help="seconds the GPU rests before each suite row's timing (default %(default)s)")
    p.add_argument("--out-dir", type=Path, default=RESULTS)
    p.add_argument("--tag", default="", help="suffix of the output files (shapes-TAG.csv ...)")
    args = p.parse_args(argv)
    from tqdm import tqdm
    command = "python -m experiments.bench " + " ".join(argv if argv is not None else sys.argv[1:])
    meta = _provenance()
    date = meta["date"]
    suffix = f"-{args.tag}" if args.tag else ""

    if args.check:
        rows = ladder_rows()
        failures = check(rows, read_rows(args.out_dir / "ladder.csv"))
        for r in rows:
            print(f"{r['version']:4s} {r['tflops']:>7s} TFLOPS  ratio {r['ratio']}")
        if failures:
            print("REGRESSION:\n  " + "\n  ".join(failures), file=sys.stderr)
            return 1
        print("ladder within 10% of ladder.csv")
        return 0

    if args.sweep or args.candidates:
        from gemm.dispatch.candidates import candidates
        rows = []
        for shape in tqdm(suite_shapes(args.shapes, args.suite_file), desc="shapes"):
            schedules = args.sweep or candidates(shape["m"], shape["n"], shape["k"], shape["batch"], shape["dtype"])
            for r in measure_shape(shape, schedules, seed=3, baselines_each=True, back_to_back=True):
                rows.append({**r, "date": date})
                print(f"{shape['name']:14s} {r['schedule']:44s} {r.get('ours_tflops') or '-':>7s} ratio "
                      f"{r.get('ratio') or '-'} {r['rel_err']}", flush=True)
        _write(args.out_dir / f"sweep{suffix}.csv", SWEEP_COLUMNS, rows, meta, command, SWEEP_PROTOCOL)
        return 0

    if not args.ladder:
        probe = suite_host_probe()
        print("host probe: " + " ".join(f"{k}={v}" for k, v in probe.items()), flush=True)
        rows = []
        for shape in tqdm(suite_shapes(args.shapes, args.suite_file), desc="suite"):
            r, = measure_shape(shape, [args.schedule], seed=1, rest_s=args.rest, probe_host=True, back_to_back=True)
            rows.append({**r, "gpu": meta["gpu"], "date": date})
        probe_after = suite_host_probe()
        copy_rate = hbm_copy_gb_per_s()
        for r in rows:   # bytes per second of the rows bound by memory, as a share of a copy's
            for rate, share in (("gb_per_s", "hbm_share"), ("b2b_gb_per_s", "b2b_hbm_share")):
                if r.get("suite") == "decode" and r.get(rate):
                    r[share] = f"{float(r[rate]) / copy_rate:.3f}"
        _write(args.out_dir / f"shapes{suffix}.csv", SHAPE_COLUMNS, rows,
               {**meta, "hbm_copy_gb_per_s": f"{copy_rate:.0f} (a 1 GiB device-to-device copy, read + write)",
                HOST_PROBE_KEY: " ".join(f"{k}={v}" for k, v in probe.items()) + f" ({HOST_PROBE_WHAT})",
                f"{HOST_PROBE_KEY}_after": " ".join(f"{k}={v}" for k, v in probe_after.items())
                + " (the same, after the suite's rows)"},
               command, PROTOCOL + f"; the GPU rests {args.rest:g} s before each row's timing")
        print(f"\n{'shape':14s} {'schedule':28s} {'ours':>7s} {'torch':>7s} {'cupy':>7s} ratio")
        for r in rows:
            print(f"{r['name']:14s} {r['schedule'][:28]:28s} {r.get('ours_tflops') or '-':>7s} "
                  f"{r['torch_tflops']:>7s} {r['cupy_tflops'] or '-':>7s} {r.get('ratio') or r['rel_err']}")
        ratios = [float(r["ratio"]) for r in rows if r.get("ratio")]
        if ratios:
            print(f"geomean ratio {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f} over {len(ratios)} shapes")
    if not args.suite:
        rows = [{**r, "date": date} for r in ladder_rows()]
        _write(args.out_dir / f"ladder{suffix}.csv", LADDER_COLUMNS, rows, meta, command)
        for r in rows:
            print(f"{r['version']:4s} {r['schedule'][:28]:28s} {r['tflops'] or '-':>7s} TFLOPS  ratio {r['ratio']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
