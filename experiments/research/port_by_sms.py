"""The model against each SM's L2 -> SM rate on partial grids (runs 170, 171 and 174):
python -m experiments.research.port_by_sms [--from-logs]      (no GPU)

The rows are docs/research/patches/port170.py's on the H200: the warp-specialized kernel's
load-only loop (and its whole loop, loads and WGMMAs) of a catalog tile on 8-132 CTAs, one CTA
an SM and one tile each, its operands L2-resident after warm-up (K = 4096 or 8192) or not
(K = 65536); per CTA its globaltimer span over its (block_m + block_n) x K x 2 bytes.
`--from-logs` rewrites experiments/results/h200-sxm/port_by_sms.csv from the runs' logs
(logs/bench/run170-port.log, run171-port.log, run174-port.log).

Each row is predicted (sim.predict) at its in-kernel clock and one CTA an SM; a row whose
operands fit in L2 with the HBM reads it had (none: the launches before it left its operands
in L2), the others with the model's own; the model's time a K tile is its kernel time less
the launch, over the K tiles. Printed by group: the loop's kind, hits or misses, up to 66 SMs
or more, deep rings (3 stages or more) or shallow ones (docs/research/notes.md items 173-174,
178).
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import statistics as st

from experiments import catalog
from experiments.paths import read_rows, results_dir, write_csv

CSV = "port_by_sms.csv"
# the tiles' grid (tm x tn) for each CTA count, as port170.py lays them out
GRIDS = {8: (4, 2), 16: (4, 4), 33: (11, 3), 64: (8, 8), 66: (11, 6), 99: (11, 9), 110: (11, 10), 132: (12, 11)}
RUN_K = {"170": 8192, "171": 4096, "174": 4096}
LONG_SPAN_US = 100.0     # run 174's K = 65536 rows: 1024 K tiles, where K = 4096 takes < 60 us
L2_RESIDENT_K = 8192     # the runs' K up to which both operands stayed in L2
HEADER = ["measured by docs/research/patches/port170.py on the H200 (driver 580.159.04): run 170 (K = 8192, "
          "--whole), run 171 (K = 4096),",
          "run 174 (K = 4096, and K = 65536 whose operands miss L2; --whole); logs/bench/run17{0,1,4}-port.log; "
          "docs/research/notes.md",
          "items 173-174, 178. One CTA an SM, the grid tm x tn tiles of the schedule's tile, each CTA one tile "
          "(operands L2-resident",
          "after warm-up where K <= 8192); per CTA its globaltimer span over its (block_m + block_n) x K x 2 bytes, "
          "median over",
          "CTAs of 5 runs; clock_ghz the in-kernel clock (clock64 / globaltimer)."]
COLUMNS = ("run", "kind", "schedule", "ctas", "m", "n", "k", "span_us", "gb_per_s_per_sm", "clk_per_k_tile",
           "ns_per_k_tile", "clock_ghz")
LINE = re.compile(r"^(load|gemm) (v\d \S+ s\d+)\s+ctas\s+(\d+) span\s+([\d.]+) us\s+([\d.]+) GB/s/SM\s+([\d.]+) "
                  r"clk/Ktile\s+([\d.]+) ns/Ktile\s+([\d.]+) GHz")


def rows_from_logs(gpu: str = "h200-sxm") -> list[dict]:
    """The CSV's rows, read off the three runs' logs."""
    out = []
    for run, k in RUN_K.items():
        for line in (results_dir(gpu) / "logs" / "bench" / f"run{run}-port.log").read_text().splitlines():
            match = LINE.match(line)
            if not match:
                continue
            kind, name, ctas, span, gbs, clk, ns, ghz = match.groups()
            name = ("load loop " if kind == "load" else "") + name
            s = catalog.entry(name).schedule
            tm, tn = GRIDS[int(ctas)]
            out.append(dict(zip(COLUMNS, (run, kind, name, ctas, tm * s.block_m, tn * s.block_n,
                                          65536 if float(span) > LONG_SPAN_US else k, span, gbs, clk, ns, ghz))))
    return out


def model_error(row: dict, gpu: str = "h200-sxm", profile=None) -> float:
    """The model's time a K tile over the row's measured one, less 1."""
    import sim
    from sim.hardware import load_profile
    s = catalog.entry(row["schedule"]).schedule
    m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
    g = dataclasses.replace(profile or load_profile(gpu), clock_ghz=float(row["clock_ghz"]))
    options = {"mmas": False} if row["kind"] == "load" else {}
    if k <= L2_RESIDENT_K:
        options.update(hbm_read_bytes=1.0, hbm_read_source="operands L2-resident")
    p = sim.predict(s, m, n, k, gpu=g, ctas_per_sm=1, **options)
    ns = (p.ms * 1e6 - (g.launch_us + g.kernel_fixed_us) * 1e3) / (k // s.block_k)
    return ns / float(row["ns_per_k_tile"]) - 1


def group(row: dict) -> tuple[str, str, str, str]:
    stages = catalog.entry(row["schedule"]).schedule.stages
    return (row["kind"], "misses" if int(row["k"]) > L2_RESIDENT_K else "hits",
            "<= 66 SMs" if int(row["ctas"]) <= 66 else "> 66 SMs", "deep" if stages >= 3 else "shallow")


def errors_by_group(gpu: str = "h200-sxm", profile=None) -> dict:
    """{group: [model error of each row]}."""
    out: dict = {}
    for r in read_rows(results_dir(gpu) / CSV):
        out.setdefault(group(r), []).append(model_error(r, gpu, profile))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="h200-sxm")
    ap.add_argument("--from-logs", action="store_true", help=f"rewrite {CSV} from the runs' logs first")
    args = ap.parse_args(argv)
    if args.from_logs:
        rows = rows_from_logs(args.gpu)
        write_csv(results_dir(args.gpu) / CSV, rows, HEADER)
        print(f"wrote {len(rows)} rows to {results_dir(args.gpu) / CSV}")
    print(f"{'kind':5s} {'operands':8s} {'SMs':10s} {'ring':8s} rows  median |error|  range")
    for key, errs in sorted(errors_by_group(args.gpu).items()):
        print(f"{key[0]:5s} {key[1]:8s} {key[2]:10s} {key[3]:8s} {len(errs):4d}  {st.median(abs(e) for e in errs):14.1%}"
              f"  {min(errs):+.0%}..{max(errs):+.0%}")


if __name__ == "__main__":
    main()
