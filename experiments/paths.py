"""Where the measurements live, and how a results CSV is read and written.

experiments/results/<gpu>/ holds the published results: CSVs whose first lines are `#`
comments saying how they were measured or derived. experiments/results/<gpu>/logs/runNN/
holds the raw records of each device run (profiler CSVs, stamps as .npz, logs) that the
research studies read.
"""
from __future__ import annotations

import csv
from pathlib import Path

RESULTS = Path(__file__).resolve().with_name("results")
REPO = RESULTS.parents[1]
DEFAULT_GPU = "h200-sxm"
SUITE = Path(__file__).with_name("shapes.json")   # the shape suite: a copy of the public one


def results_dir(gpu: str = DEFAULT_GPU, results: Path = RESULTS) -> Path:
    """experiments/results/<gpu>: the published CSVs of one GPU."""
    return Path(results) / gpu


def logs_dir(gpu: str = DEFAULT_GPU, results: Path = RESULTS) -> Path:
    """experiments/results/<gpu>/logs: the raw records, one folder per device run."""
    return results_dir(gpu, results) / "logs"


def read_rows(path: Path) -> list[dict]:
    """The rows of a results CSV, its `#` comment lines skipped."""
    return list(csv.DictReader(ln for ln in Path(path).read_text().splitlines() if not ln.startswith("#")))


def read_comments(path: Path) -> list[str]:
    """The `#` comment lines of a results CSV (its provenance)."""
    return [ln for ln in Path(path).read_text().splitlines() if ln.startswith("#")]


def write_csv(path: Path, rows: list[dict], comment: str | list[str]) -> None:
    """Rows (their keys in order of first appearance) under `# comment` line(s)."""
    fields = list(dict.fromkeys(k for r in rows for k in r))
    comments = [comment] if isinstance(comment, str) else comment
    with Path(path).open("w", newline="") as f:
        for c in comments:
            f.write(c if c.startswith("#") else f"# {c}")
            f.write("\n")
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows([{k: r.get(k, "") for k in fields} for r in rows])
