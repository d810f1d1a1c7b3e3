"""Publish, once, the tables the regression tests read, derived from the raw run records.

  python -m experiments.research.publish            # (re)write them
  python -m experiments.research.publish --check    # derive them again and compare (no writing)

The tests under tests/ read only published CSVs in experiments/results/<gpu>/, never the raw
records under logs/. These are copied or derived from those records without a model in
between, each under a `#` header naming its runs and this command:

  clock_transient.csv     every launch timed from a rested GPU (runs 38, 39, 44-46, 58): the rows of
                          each run's `clock_transient --summarize` table, a `run` column first
  power_sweep.csv         board power against busy SMs (runs 36, 37, 40, 41): the rows of each
                          run's `power_sweep --summarize` table, a `run` column first
  activity.csv            every launch profiled by experiments/research/activity.py under Nsight
                          Compute (runs 48-62): its counted clock, tensor use per clock, L2 -> SM and
                          DRAM TB/s (activity.activities), DRAM read bytes and time, and the kernel
                          and shape its label stands for (activity.shape_of)
  same_launch.csv         run 29's eleven kernels: DRAM read bytes (Nsight Compute) of the launch ...
  same_launch_stamps.csv  ... whose every CTA's start (ns after the launch's first), duration (ns)
                          and SM the clock probe recorded (l2_same_launch.py, one profiler pass)
"""
from __future__ import annotations

import argparse
import csv
import io
import sys

import numpy as np

from experiments.paths import logs_dir, read_comments, read_rows, results_dir
from experiments.research.activity import activities, labelled_launches, shape_of
from experiments.research.hbm_compare import read_ncu
from experiments.research.l2_same_launch import KERNELS as SAME_LAUNCH

TRANSIENT_RUNS = ("run38", "run39", "run44", "run45", "run46", "run58")
SWEEP_RUNS = ("run36", "run37", "run40", "run41")
ACTIVITY_RUNS = ("run48", "run49", "run50", "run51", "run52", "run53", "run54", "run56", "run58", "run61", "run62")
COMMAND = "python -m experiments.research.publish"


def _stacked(runs, file: str, study: str, record: str, what: str) -> tuple[list[dict], str]:
    """The rows of logs/<run>/<file> for each run, a `run` column first, and their header: `what`,
    and the command that summarized each run's raw `record` into its file."""
    rows = [{"run": run, **r} for run in runs for r in read_rows(logs_dir() / run / file)]
    return rows, (f"{what}; runs {', '.join(runs)} (logs/<run>/{file}, from python -m experiments.research.{study} "
                  f"--summarize logs/<run>/{record}); {COMMAND}")


def clock_transient() -> tuple[list[dict], str]:
    return _stacked(TRANSIENT_RUNS, "clock_transient.csv", "clock_transient", "transient.npz",
                    "TFLOPS and counted clocks of each launch from a rested GPU, medians by window of launch numbers, "
                    "and stamped launches against the model as it stood (model_tflops columns)")


def power_sweep() -> tuple[list[dict], str]:
    return _stacked(SWEEP_RUNS, "power_sweep.csv", "power_sweep", "sweep.npz",
                    "board power against busy SMs (nvidia-smi power.draw.instant every 20 ms, median of the second "
                    "half of each point) and the activity of the loop's last launch; K = 131072")


def activity() -> tuple[list[dict], str]:
    rows = []
    for run in ACTIVITY_RUNS:
        if not (logs_dir() / run / "labels.json").exists():
            continue
        for label, launch in labelled_launches(logs_dir() / run):
            name, m, n, k, ld = shape_of(label)
            a = activities(launch)
            rows.append({"run": run, "launch": label, "schedule": name, "m": m, "n": n, "k": k, "row_pad": ld,
                         "f_ghz": repr(a["f"]), "u": repr(a["u"]), "l2_tbs": repr(a["L"]), "dram_tbs": repr(a["H"]),
                         "dram_read_bytes": repr(launch["dram__bytes_read.sum"]),
                         "ms": repr(launch["gpu__time_duration.sum"] / 1e6)})
    return rows, (
        "every launch profiled under Nsight Compute (2025.3.1, clock and caches left alone, NVIDIA H200) by "
        f"experiments/research/activity.py, runs {', '.join(r[3:] for r in ACTIVITY_RUNS)} (logs/<run>/ncu.csv and "
        "labels.json): f_ghz the counted SM clock, u tensor use per clock, l2_tbs L2 -> SM and dram_tbs DRAM "
        "(read + write) TB/s, dram_read_bytes, ms; schedule (an experiments.catalog name), m, n, k and row_pad "
        f"(elements past K per row) the kernel and shape the label stands for; {COMMAND}")


def same_launch() -> tuple[list[dict], str]:
    ncu = read_ncu(logs_dir() / "run29" / "ncu.csv")
    rows = [{"kernel": name, "schedule": key, "k": k, "dram_read_bytes": repr(m["dram__bytes_read.sum"])}
            for (name, key, k), m in zip(SAME_LAUNCH, ncu, strict=True)]
    return rows, ("run 29: Nsight Compute's dram__bytes_read of one launch of each kernel (one profiler pass, "
                  "M = N = 8192, fp16, B stored [N, K]), whose every CTA's stamps are same_launch_stamps.csv "
                  f"(logs/run29/ncu.csv, probes.npz; experiments/research/l2_same_launch.py); {COMMAND}")


def same_launch_stamps() -> tuple[list[dict], str]:
    probes = np.load(logs_dir() / "run29" / "probes.npz")
    rows = []
    for name, _, _ in SAME_LAUNCH:
        rec = probes[name].astype(np.int64)
        t0 = rec[:, 1].min()
        rows += [{"kernel": name, "cta": i, "sm": int(r[4]), "start_ns": int(r[1] - t0), "duration_ns": int(r[3] - r[1])}
                 for i, r in enumerate(rec)]
    return rows, ("run 29: every CTA of each kernel's measured launch, in launch order: its SM, its start on "
                  "%globaltimer in ns after the launch's first start, its duration in ns (the clock probe; "
                  f"logs/run29/probes.npz); {COMMAND}")


TABLES = {"clock_transient.csv": clock_transient, "power_sweep.csv": power_sweep, "activity.csv": activity,
          "same_launch.csv": same_launch, "same_launch_stamps.csv": same_launch_stamps}


def render(rows: list[dict], comment: str) -> str:
    out = io.StringIO()
    out.write(f"# {comment}\n")
    fields = list(dict.fromkeys(k for r in rows for k in r))
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows([{k: r.get(k, "") for k in fields} for r in rows])
    return out.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="derive each table again and compare with the published one")
    ap.add_argument("tables", nargs="*", metavar="TABLE", help=f"only these (default: all of {', '.join(TABLES)})")
    args = ap.parse_args(argv)
    unknown = set(args.tables) - set(TABLES)
    if unknown:
        ap.error(f"unknown tables {sorted(unknown)}")
    stale = []
    for name in args.tables or TABLES:
        text = render(*TABLES[name]())
        path = results_dir() / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
            continue
        path.write_text(text)
        print(f"wrote {path} ({len(read_rows(path))} rows; {read_comments(path)[0][:80]}...)")
    if stale:
        print("not what the logs give:", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
