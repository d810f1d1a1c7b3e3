"""What the two-step device studies share (launch_spread, power_draw, power_sweep,
clock_transient): `--dump FILE.npz` runs on the GPU and saves the raw record, `--summarize
FILE.npz` reads it back with no GPU, `--csv` writes the summary rows (experiments.paths.write_csv)."""
from __future__ import annotations

import argparse
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


def run(doc: str, dump, summarize, print_summary, csv_rows, argv=None) -> None:
    """The usual main of a study: `--dump` measures (dump(path)), then the record (the dump's or
    --summarize's) is summarized and printed; with `--csv`, csv_rows(summary, record) gives the
    rows and the header's first line, and the record's provenance (gpu, driver, date) its second."""
    args = parse(dump_summarize_parser(doc, "measure and write the record here"), argv)
    if args.dump:
        dump(args.dump)
    report(args, summarize, print_summary, csv_rows)


def report(args: argparse.Namespace, summarize, print_summary, csv_rows) -> None:
    """Summarize the record (the dump's or --summarize's) and print it; with `--csv`, write
    csv_rows(summary, record)'s rows under its header line and the record's provenance."""
    from experiments.paths import write_csv
    s = summarize(args.record)
    print_summary(s)
    if args.csv:
        rows, what = csv_rows(s, args.record)
        prov = s["provenance"]
        write_csv(args.csv, rows, [what, f"gpu: {prov.get('gpu')}; driver: {prov.get('driver')}; "
                                         f"date: {prov.get('date')}"])


def rounded(rows: list[dict], digits: int = 4) -> list[dict]:
    """Summary rows for a CSV: floats rounded to `digits`, the rest as they are."""
    return [{k: (round(v, digits) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]
