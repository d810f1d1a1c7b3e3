"""What the two-step device experiments share (launch_spread, power_draw): `--dump FILE.npz`
runs on the H200 and saves the raw record, `--summarize FILE.npz` reads it back with no GPU,
`--csv` writes the summary rows; and a results CSV with its provenance as a comment line."""
from __future__ import annotations

import argparse
import csv
from pathlib import Path


def dump_summarize_parser(doc: str, dump_help: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", type=Path, metavar="FILE.npz", help=f"{dump_help} (needs the H200)")
    ap.add_argument("--summarize", type=Path, metavar="FILE.npz", help="summarize what --dump wrote (no GPU)")
    ap.add_argument("--csv", type=Path, help="write the summary rows here")
    return ap


def parse(ap: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    args = ap.parse_args(argv)
    if not (args.dump or args.summarize):
        ap.error("give --dump or --summarize")
    args.record = args.summarize or args.dump
    return args


def write_csv(path: Path, rows: list[dict], comment: str) -> None:
    """Rows (their keys in order of first appearance) under one `# comment` line."""
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with Path(path).open("w", newline="") as f:
        f.write(f"# {comment}\n")
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows([{k: r.get(k, "") for k in fields} for r in rows])
