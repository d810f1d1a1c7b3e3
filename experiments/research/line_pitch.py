"""What lines that start off a 128-byte boundary cost the kernels.
python -m experiments.research.line_pitch --dump FILE.npz       (on the GPU)
python -m experiments.research.line_pitch --summarize FILE.npz [--csv F]   (no GPU)

TMA reads a matrix whose lines (rows of a K-major operand) are any multiple of 16 bytes apart.
A line whose pitch is not a multiple of 128 bytes starts inside a cache line, so each 128-byte
row of a box straddles two (odd4095's operands read from 8208-byte lines ran 4-30% slower than
from 8320-byte ones: docs/research/notes.md item 118). This times the same operands read in
place from buffers whose lines are P elements apart: P = K (4096 bytes), K + 8 (16-byte
multiple, off 128) and K + 64 (128-byte multiple, not a power of two), for kernels of several
tiles with and without multicast (CASES: whole waves, L2-resident operands), and odd1000 (its
own 2000-byte lines against 2048 and 2176), reported, not fitted: its ~15 us calls back to back
run at the host's pace, not the kernel's. The call back to back
(experiments.timing.back_to_back_us, CALLS calls) after REST_S seconds of rest, the pitches and
kernels interleaved over REPEATS rounds, the median kept; every element checked first.

The summary calibrates the profile's `l2_misaligned_row_clk` (the L2's time for each box row an
SM requests of an operand whose lines start off 128 bytes: sim.model.hardware_floors) on the
large cases: the value, on a 0.1-clock grid, that minimises the squared log error of each
kernel's time at pitch K + 8 over its time at pitch K, against sim.fast_predict's same ratio at
the early clock (load_clock), over the large cases.
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
# (shape, kernels, extra elements per line): K + extra elements apart; each case has one
# pitch off 128 bytes and two 128-byte multiples (odd1000's own lines are the one off)
CASES = (
    ((4096, 4224, 2048), ("v7:block_n=128,stages=4", "v7:block_n=128,stages=4,cluster_m=2",
                          f"v7:block_m=64,block_n=256,{ONE_WG},stages=4"), (0, 8, 64)),
    ((5632, 3072, 2048), ("v7", "v7:cluster_m=2", "v7:block_m=256,block_n=128,cluster_n=2"), (0, 8, 64)),
    ((1000, 1000, 1000), (f"v7:block_m=64,block_n=128,{ONE_WG},stages=8", "v7"), (0, 24, 88)),
)
HOST_PACED = (1000, 1000, 1000)   # reported, not fitted
REPEATS = 5
CALLS = 30
REST_S = 0.5
GRID = tuple(round(0.1 * i, 1) for i in range(0, 101))


def _key(shape, spec, pitch) -> str:
    return f"{'x'.join(map(str, shape))}|{spec}|{pitch}"


def dump(path: Path) -> None:
    import time

    import torch

    import gemm
    from experiments.measure import provenance
    from experiments.timing import back_to_back_us
    from gemm.schedule import from_spec
    times, errors = {}, {}
    for (m, n, k), specs, pads in CASES:
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
        for r in range(REPEATS):
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


def _pitches(k: int, pads) -> tuple[int, int]:
    """(the pitch off 128 bytes, the first 128-byte one) among k + pads."""
    pitches = [k + pad for pad in pads]
    return (next(p for p in pitches if (2 * p) % 128), next(p for p in pitches if (2 * p) % 128 == 0))


def summarize(path: Path, gpu: str = "h200-sxm") -> dict:
    from sim.hardware import load_profile
    rec = json.loads(str(np.load(path)["record"]))
    prof = load_profile(gpu)
    early = dataclasses.replace(prof, clock_ghz=prof.load_clock["float16"]["early_ghz"])
    kernels = []
    for shape, specs, pads in CASES:
        k = shape[2]
        for spec in specs:
            us = {k + pad: statistics.median(rec["times_us"][_key(shape, spec, k + pad)]) for pad in pads}
            off, aligned = _pitches(k, pads)
            kernels.append({"shape": list(shape), "schedule": spec, "us_by_pitch": us, "misaligned_pitch": off,
                            "aligned_pitch": aligned, "measured_ratio": us[off] / us[aligned],
                            "host_paced": tuple(shape) == HOST_PACED,
                            "max_rel_err": max(rec["rel_err"][_key(shape, spec, k + pad)] for pad in pads),
                            "model_ratio": {c: _model_ratio(dataclasses.replace(early, l2_misaligned_row_clk=c),
                                                            spec, shape, off, aligned) for c in GRID}})
    fit = [kk for kk in kernels if not kk["host_paced"]]
    best = min(GRID, key=lambda c: sum(math.log(kk["measured_ratio"] / kk["model_ratio"][c]) ** 2 for kk in fit))
    return {"provenance": rec["provenance"], "kernels": kernels, "l2_misaligned_row_clk": best,
            "clock_ghz": early.clock_ghz}


def print_summary(s: dict) -> None:
    c = s["l2_misaligned_row_clk"]
    print(f"time at a pitch off 128 bytes over the first 128-byte pitch's, the call back to back; the model "
          f"(sim.fast_predict at {s['clock_ghz']:.3f} GHz) with l2_misaligned_row_clk = 0 / {c:.1f}")
    for kk in s["kernels"]:
        pitches = "  ".join(f"{p}: {t:.1f} us" for p, t in kk["us_by_pitch"].items())
        print(f"{'x'.join(map(str, kk['shape']))} {kk['schedule'][:48]:48s} {pitches}  ratio "
              f"{kk['measured_ratio']:.3f}, model {kk['model_ratio'][0.0]:.3f} / {kk['model_ratio'][c]:.3f}"
              f"{'  (host-paced, not fitted)' if kk['host_paced'] else ''}")
    print(f"l2_misaligned_row_clk = {c:.1f}")


def csv_rows(s: dict, record) -> tuple[list[dict], str]:
    c = s["l2_misaligned_row_clk"]
    rows = [{"m": kk["shape"][0], "n": kk["shape"][1], "k": kk["shape"][2], "schedule": kk["schedule"],
             "pitch_off128": kk["misaligned_pitch"], "pitch_aligned": kk["aligned_pitch"],
             "us_off128": round(kk["us_by_pitch"][kk["misaligned_pitch"]], 2),
             "us_aligned": round(kk["us_by_pitch"][kk["aligned_pitch"]], 2),
             "measured_ratio": round(kk["measured_ratio"], 4), "model_ratio_free": round(kk["model_ratio"][0.0], 4),
             "model_ratio_charged": round(kk["model_ratio"][c], 4), "host_paced": kk["host_paced"]} for kk in s["kernels"]]
    return rows, (f"a pitch off 128 bytes over the aligned one, the call back to back; medians of {REPEATS} "
                  f"rounds; python -m experiments.research.line_pitch --summarize {record}")


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, print_summary, csv_rows, argv)


if __name__ == "__main__":
    main()
