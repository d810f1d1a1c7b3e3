"""What lines that start off a 128-byte boundary cost the kernels.
python -m experiments.research.line_pitch --dump FILE.npz [--cases sectors]   (on the GPU)
python -m experiments.research.line_pitch --summarize FILE.npz [--csv F]       (no GPU)

TMA reads a matrix whose lines (rows of a K-major operand) are any multiple of 16 bytes apart.
A line whose pitch is not a multiple of 128 bytes starts inside a cache line, so each 128-byte
row of a box straddles two (odd4095's operands read from 8208-byte lines ran 4-30% slower than
from 8320-byte ones: docs/research/notes.md item 118). This times the same operands read in
place from buffers whose lines are K + pad elements apart, for kernels of several tiles with
and without multicast (whole waves, L2-resident operands). The first study (CASES, run 93):
pads 0, 8 (16 bytes off 128) and 64 (a 128-byte multiple, not a power of two), and odd1000
(its own 2000-byte lines against 2048 and 2176), reported, not fitted: its ~15 us calls back
to back run at the host's pace, not the kernel's. The second (SECTOR_CASES, run 152): pads 8,
16, 32 and 48 elements (16, 32, 64, 96 bytes off), and odd3000's own 4000-byte lines: does a
line that starts on a 32-byte sector cost what one that starts inside a sector does? The call
back to back (experiments.timing.back_to_back_us, CALLS calls) after REST_S seconds of rest,
the pitches and kernels interleaved over the rounds, the median kept; every element checked
first. The summary reads the cases off the record's keys.

The summary calibrates the profile's two row costs (the L2's time for each box row an SM
requests of an operand whose lines start off 128 bytes: sim.model.hardware_floors), each on the
pitches of its kind (sim.model.line_starts): `l2_misaligned_row_clk` where lines start inside a
32-byte sector, `l2_line_straddle_row_clk` where they start on one. Each is the value, on a
0.1-clock grid, that minimises the squared log error of each kernel's time at such a pitch over
its time at the aligned one, against sim.fast_predict's same ratio at the early clock
(load_clock), over the cases not paced by the host.
"""
from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path

import numpy as np

from experiments.research import cli

ONE_WG = "consumer_warpgroups=1,producer_registers=0,consumer_registers=0"
# (shape, kernels, extra elements per line): lines K + extra elements apart
CASES = (
    ((4096, 4224, 2048), ("v7:block_n=128,stages=4", "v7:block_n=128,stages=4,cluster_m=2",
                          f"v7:block_m=64,block_n=256,{ONE_WG},stages=4"), (0, 8, 64)),
    ((5632, 3072, 2048), ("v7", "v7:cluster_m=2", "v7:block_m=256,block_n=128,cluster_n=2"), (0, 8, 64)),
    ((1000, 1000, 1000), (f"v7:block_m=64,block_n=128,{ONE_WG},stages=8", "v7"), (0, 24, 88)),
)
SECTOR_CASES = (
    ((4096, 4224, 2048), ("v7:block_n=128,stages=4", "v7:block_n=128,stages=4,cluster_m=2"), (0, 8, 16, 32, 48)),
    ((5632, 3072, 2048), ("v7", "v7:block_m=256,block_n=128,cluster_n=2"), (0, 8, 16, 32, 48)),
    ((3000, 5000, 2000), ("v7", "v7:block_m=256,block_n=128,cluster_n=2"), (0, 8, 48)),
)
HOST_PACED = (1000, 1000, 1000)   # reported, not fitted
REPEATS = 5
CALLS = 30
REST_S = 0.5
GRID = tuple(round(0.1 * i, 1) for i in range(0, 101))
# the profile parameter each kind of line start is charged by (sim.model.line_starts)
ROW_COST = {"inside a sector": "l2_misaligned_row_clk", "sector": "l2_line_straddle_row_clk"}


def _key(shape, spec, pitch) -> str:
    return f"{'x'.join(map(str, shape))}|{spec}|{pitch}"


def dump(path: Path, cases=CASES, repeats: int = REPEATS) -> None:
    import time

    import torch

    import gemm
    from experiments.measure import provenance
    from experiments.timing import back_to_back_us
    from gemm.schedule import from_spec
    times, errors = {}, {}
    for (m, n, k), specs, pads in cases:
        g = torch.Generator(device="cuda").manual_seed(0)
        a0 = (torch.randn(m, k, generator=g, device="cuda") * k ** -0.25).half()
        w0 = (torch.randn(n, k, generator=g, device="cuda") * k ** -0.25).half()
        ref = a0.double() @ w0.double().t()
        views = {}
        for pad in pads:   # the same values, lines k + pad elements apart, read in place
            a = torch.zeros(m, k + pad, device="cuda", dtype=torch.half)
            w = torch.zeros(n, k + pad, device="cuda", dtype=torch.half)
            a[:, :k], w[:, :k] = a0, w0
            views[k + pad] = (a[:, :k], w[:, :k].t())
        for spec in specs:
            for pitch, (a, b) in views.items():
                c = gemm.matmul(a, b, schedule=from_spec(spec))
                errors[_key((m, n, k), spec, pitch)] = float(torch.linalg.norm(c.double() - ref)
                                                           / torch.linalg.norm(ref))
                times[_key((m, n, k), spec, pitch)] = []
        for r in range(repeats):
            for spec in specs:
                for pitch, (a, b) in (list(views.items()) if r % 2 == 0 else list(views.items())[::-1]):
                    sch = from_spec(spec)
                    time.sleep(REST_S)
                    times[_key((m, n, k), spec, pitch)].append(
                        back_to_back_us(lambda i: gemm.matmul(a, b, schedule=sch), calls=CALLS))
    np.savez_compressed(path, record=json.dumps({"provenance": provenance(), "times_us": times, "rel_err": errors}))


def _model_ratio(prof, spec: str, shape, off: int, aligned: int) -> float:
    """sim.fast_predict's time with both operands' lines `off` elements apart over `aligned`."""
    import sim
    from gemm.schedule import from_spec
    m, n, k = shape
    s = from_spec(spec)
    return (sim.fast_predict(s, m, n, k, gpu=prof, line_pitch=(off, off)).ms
            / sim.fast_predict(s, m, n, k, gpu=prof, line_pitch=(aligned, aligned)).ms)


def summarize(path: Path, gpu: str = "h200-sxm") -> dict:
    from sim.hardware import load_profile
    from sim.model import line_starts
    rec = json.loads(str(np.load(path)["record"]))
    prof = load_profile(gpu)
    early = dataclasses.replace(prof, clock_ghz=prof.load_clock["float16"]["early_ghz"])
    kernels = []
    measured: dict[tuple, dict] = {}      # (shape, kernel) -> {pitch: the median time}
    for key, times in rec["times_us"].items():
        shape, spec, pitch = key.split("|")
        measured.setdefault((tuple(map(int, shape.split("x"))), spec), {})[int(pitch)] = statistics.median(times)
    free = dataclasses.replace(early, **{name: 0.0 for name in ROW_COST.values()})
    for (shape, spec), us in measured.items():
        aligned = next(p for p in us if (2 * p) % 128 == 0)
        offs = []
        for pitch, start in ((p, line_starts((p, p))[0]) for p in us):
            if start != "line":
                offs.append({"pitch": pitch, "start": start, "measured_ratio": us[pitch] / us[aligned],
                             "model_ratio": {c: _model_ratio(dataclasses.replace(free, **{ROW_COST[start]: c}),
                                                             spec, shape, pitch, aligned) for c in GRID}})
        kernels.append({"shape": list(shape), "schedule": spec, "us_by_pitch": us, "aligned_pitch": aligned,
                        "off": offs, "host_paced": shape == HOST_PACED,
                        "max_rel_err": max(rec["rel_err"][_key(shape, spec, p)] for p in us)})
    fitted = {}
    for start, name in ROW_COST.items():
        fit = [o for kk in kernels if not kk["host_paced"] for o in kk["off"] if o["start"] == start]
        if fit:
            fitted[name] = min(GRID, key=lambda c: sum(math.log(o["measured_ratio"] / o["model_ratio"][c]) ** 2
                                                       for o in fit))
    return {"provenance": rec["provenance"], "kernels": kernels, "clock_ghz": early.clock_ghz, **fitted}


def print_summary(s: dict) -> None:
    print(f"time at each pitch off 128 bytes over the aligned pitch's, the call back to back; the model "
          f"(sim.fast_predict at {s['clock_ghz']:.3f} GHz) free / at the fitted row cost")
    for kk in s["kernels"]:
        pitches = "  ".join(f"{p}: {t:.1f} us" for p, t in kk["us_by_pitch"].items())
        print(f"{'x'.join(map(str, kk['shape']))} {kk['schedule'][:48]:48s} {pitches}"
              f"{'  (host-paced, not fitted)' if kk['host_paced'] else ''}")
        for o in kk["off"]:
            c = s.get(ROW_COST[o["start"]], 0.0)
            print(f"    {o['pitch']} ({2 * o['pitch'] % 128} bytes off 128, lines start {o['start']}): ratio "
                  f"{o['measured_ratio']:.3f}, model {o['model_ratio'][0.0]:.3f} / {o['model_ratio'][c]:.3f}")
    for name in ROW_COST.values():
        if name in s:
            print(f"{name} = {s[name]:.1f}")


def csv_rows(s: dict, record) -> tuple[list[dict], str]:
    rows = []
    for kk in s["kernels"]:
        for o in kk["off"]:
            c = s.get(ROW_COST[o["start"]], 0.0)
            rows.append({"m": kk["shape"][0], "n": kk["shape"][1], "k": kk["shape"][2], "schedule": kk["schedule"],
                         "pitch_off128": o["pitch"], "bytes_off128": 2 * o["pitch"] % 128, "lines_start": o["start"],
                         "pitch_aligned": kk["aligned_pitch"], "us_off128": round(kk["us_by_pitch"][o["pitch"]], 2),
                         "us_aligned": round(kk["us_by_pitch"][kk["aligned_pitch"]], 2),
                         "measured_ratio": round(o["measured_ratio"], 4),
                         "model_ratio_free": round(o["model_ratio"][0.0], 4),
                         "model_ratio_charged": round(o["model_ratio"][c], 4), "host_paced": kk["host_paced"]})
    return rows, (f"each pitch off 128 bytes over the aligned one, the call back to back; medians of the "
                  f"rounds; python -m experiments.research.line_pitch --summarize {record}")


def main(argv=None) -> None:
    ap = cli.dump_summarize_parser(__doc__, "measure and write the record here")
    ap.add_argument("--cases", choices=("pitches", "sectors"), default="pitches",
                    help="--dump: CASES (16 bytes off 128, run 93) or SECTOR_CASES (16-96 bytes off, run 152)")
    args = cli.parse(ap, argv)
    if args.dump:
        dump(args.dump, CASES if args.cases == "pitches" else SECTOR_CASES,
             REPEATS if args.cases == "pitches" else 3)
    cli.report(args, summarize, print_summary, csv_rows)


if __name__ == "__main__":
    main()
