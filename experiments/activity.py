"""What each kernel does per SM clock, as Nsight Compute counts it, beside the clock it starts at.
Run under Nsight Compute (experiments/device_activity.sh):

  ncu --nvtx --nvtx-include "measured/" --set full --page raw --clock-control none \\
      --cache-control none --csv python3 -m experiments.activity --labels L
  python -m experiments.activity --summarize DIR [--csv FILE]          (no GPU)

Why: from a rested GPU the kernels start at clocks that neither their tensor work nor their
L2 bytes per clock order (runs 44-46, experiments/NOTES.md 53-55): V3 s2 at 1.39-1.42 GHz and
V3 s3 at 1.25 do the same work per clock; the WGMMA-only loop, as busy on the tensor cores,
starts at 1.64. Something else the schedule does sets it. This profiles each kernel of those
runs with every counter of Nsight Compute's full set (each launch replayed pass by pass, the
clock left alone) and ranks the counters, as rates per SM cycle, by how well they order the
early clocks, and by how far apart they put V3 s2 and V3 s3.

`--labels`: launches each kernel of KERNELS (warmed up outside the profiled range) `--repeat`
times inside an NVTX range "measured", and writes the names in launch order to the JSON file.
`--summarize DIR`: reads DIR/ncu.csv (the raw page: one row per launch, one column per
counter) and DIR/labels.json; the early clocks come from the clock_transient logs (EARLY_RUNS).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import statistics as st
from pathlib import Path

import numpy as np

LOGS = Path(__file__).with_name("results") / "h200-sxm" / "logs"
KERNELS = ("v1", "v2", "v2-local", "v2 s3", "v2 s4", "v3 s2", "v3 s3", "v3 s4",
           "mma loop 128x128x64 s2", "load loop 128x128x64 s2")
# clock_transient runs whose "clock first 5" (counted GHz, first five launches after 4 s idle)
# give each kernel's early clock; a kernel in several runs takes the median over them
EARLY_RUNS = ("run38", "run39", "run44", "run45", "run46")
CYCLES = "sm__cycles_elapsed.avg"  # per SM; the denominator of every per-cycle rate


def early_clocks(logs: Path = LOGS) -> dict[str, float]:
    """{kernel: median counted GHz over its first five launches after a rest, all passes and runs}."""
    seen: dict[str, list[float]] = {}
    for run in EARLY_RUNS:
        path = logs / run / "clock_transient.csv"
        if not path.exists():
            continue
        with path.open() as f:
            for r in csv.DictReader(ln for ln in f if not ln.startswith("#")):
                if r.get("clock first 5"):
                    seen.setdefault(r["kernel"], []).append(float(r["clock first 5"]))
    return {k: st.median(v) for k, v in seen.items()}


def read_raw(path: Path) -> list[dict]:
    """Nsight Compute's raw page (--page raw --csv): {counter: value} per profiled launch, in
    launch order; counters whose value is not a number are dropped."""
    lines = [ln for ln in Path(path).read_text().splitlines() if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, data = rows[0], rows[2:]  # rows[1]: the units
    out = []
    for r in data:
        vals = {}
        for name, v in zip(header, r):
            try:
                vals[name] = float(v.replace(",", ""))
            except ValueError:
                pass
        out.append(vals)
    ids = [int(v["ID"]) for v in out] if out and "ID" in out[0] else list(range(len(out)))
    return [v for _, v in sorted(zip(ids, out), key=lambda t: t[0])]


def per_cycle(launch: dict) -> dict:
    """Each additive counter (.sum) as a rate per SM per SM cycle; ratios and averages kept as they are."""
    cyc = launch.get(CYCLES)
    sms = launch.get("device__attribute_multiprocessor_count") or 132
    out = {}
    for name, v in launch.items():
        if name == "ID":
            continue
        if name.endswith(".sum") and cyc:
            out[name + " /sm/clk"] = v / sms / cyc
        elif not name.endswith(".sum"):
            out[name] = v
    return out


def _spearman(x, y) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def summarize(logs: Path, out_csv: Path | None = None, top: int = 25) -> dict:
    meta = json.loads((logs / "labels.json").read_text())
    launches = read_raw(logs / "ncu.csv")
    if len(launches) != len(meta["labels"]):
        raise ValueError(f"{logs}: {len(launches)} profiled launches for {len(meta['labels'])} labels")
    by_kernel: dict[str, list[dict]] = {}
    for name, launch in zip(meta["labels"], launches):
        by_kernel.setdefault(name, []).append(per_cycle(launch))
    rates = {k: {c: st.median(r[c] for r in rs) for c in rs[0] if all(c in r for r in rs)}
             for k, rs in by_kernel.items()}
    early = early_clocks()
    known = [k for k in rates if k in early]
    counters = sorted(set.intersection(*(set(rates[k]) for k in rates)))
    ranked = []
    for c in counters:
        x = np.array([rates[k][c] for k in known])
        if np.ptp(x) <= 1e-12 * max(1.0, np.abs(x).max()):
            continue
        row = {"counter": c, "spearman_vs_early_clock": round(_spearman(x, [early[k] for k in known]), 3)}
        if {"v3 s2", "v3 s3"} <= set(rates) and rates["v3 s2"][c]:
            row["v3_s3_over_v3_s2"] = round(rates["v3 s3"][c] / rates["v3 s2"][c], 4)
        row.update({k: rates[k][c] for k in rates})
        ranked.append(row)
    ranked.sort(key=lambda r: r["spearman_vs_early_clock"])
    if out_csv:
        fields = ["counter", "spearman_vs_early_clock", "v3_s3_over_v3_s2", *rates]
        with Path(out_csv).open("w", newline="") as f:
            f.write(f"# per-SM-cycle rates of Nsight Compute's full set, one column per kernel (median over "
                    f"{meta['repeat']} launches), ranked by Spearman correlation with the early clock "
                    f"(clock_transient runs {', '.join(EARLY_RUNS)}: "
                    + "; ".join(f"{k} {early[k]:.3f}" for k in known)
                    + f"); python -m experiments.activity --summarize {logs}; {json.dumps(meta['info'])}\n")
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(ranked)
    return {"info": meta["info"], "early": {k: early[k] for k in known}, "rates": rates, "ranked": ranked,
            "top": top}


def _print(res: dict) -> None:
    early, ranked = res["early"], res["ranked"]
    order = sorted(early, key=early.get)
    print("early clock (GHz): " + ", ".join(f"{k} {early[k]:.3f}" for k in order))
    print("counters most against the early clock (more per clock, lower clock), then most with it:")
    shown = ranked[:res["top"]] + ranked[max(res["top"], len(ranked) - 10):]
    print(f"{'rho':>6s} {'s3/s2':>6s}  counter  |  " + "  ".join(k[:10] for k in order))
    for r in shown:
        print(f"{r['spearman_vs_early_clock']:6.2f} {r.get('v3_s3_over_v3_s2', float('nan')):6.3f}  {r['counter'][:70]:70s}"
              + "  ".join(f"{r[k]:10.4g}" for k in order))
    apart = sorted((r for r in ranked if "v3_s3_over_v3_s2" in r and np.isfinite(r["v3_s3_over_v3_s2"])),
                   key=lambda r: -abs(np.log(max(r["v3_s3_over_v3_s2"], 1e-9))))
    print("counters that put V3 s3 furthest from V3 s2 (same tensor work per clock, 12% lower early clock):")
    for r in apart[:res["top"]]:
        print(f"  {r['v3_s3_over_v3_s2']:7.3f}  rho {r['spearman_vs_early_clock']:5.2f}  {r['counter']}")


def launch(labels_path: Path, repeat: int, warmups: int = 5) -> None:
    import torch
    from torch.cuda import nvtx

    from gemm.kernels import KernelConfig

    from .clock_transient import M, N, K, _catalog
    from .probe import probed_launcher
    from .reference import random_operands
    a, b = random_operands(M, N, K, "float16", seed=1)
    b = b.t().contiguous().t()
    catalog = _catalog()
    labels = []
    for name in KERNELS:
        s, kind, pad = catalog[name]
        run = probed_launcher(KernelConfig(s, "float16", "k", "k", clock_probe=True, mma_loop_only=kind == "mma",
                                           load_loop_only=kind == "load"), M, N, K, 1, pad)[0]
        for _ in range(warmups):
            run(a, b)
        torch.cuda.synchronize()
        for _ in range(repeat):
            nvtx.range_push("measured")
            run(a, b)
            torch.cuda.synchronize()
            nvtx.range_pop()
            labels.append(name)
        print(name, flush=True)
    info = {"gpu": torch.cuda.get_device_name(), "m": M, "n": N, "k": K, "warmups": warmups}
    Path(labels_path).write_text(json.dumps({"info": info, "repeat": repeat, "labels": labels}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--labels", type=Path, help="launch the kernels (on the GPU, under ncu); their names in "
                                                "launch order go to this JSON file")
    ap.add_argument("--repeat", type=int, default=2, help="profiled launches per kernel (default %(default)s)")
    ap.add_argument("--summarize", type=Path, metavar="DIR", help="read DIR/ncu.csv and DIR/labels.json (no GPU)")
    ap.add_argument("--csv", type=Path, help="with --summarize: write every ranked counter here")
    ap.add_argument("--top", type=int, default=25, help="counters to print per list (default %(default)s)")
    args = ap.parse_args(argv)
    if args.summarize:
        res = summarize(args.summarize, args.csv, args.top)
        _print(res)
        return
    if not args.labels:
        ap.error("give --labels (launch the kernels under ncu) or --summarize DIR")
    launch(args.labels, args.repeat)


if __name__ == "__main__":
    main()
