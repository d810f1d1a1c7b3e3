"""Ours against cuBLAS in short alternating blocks and in long ones: work per clock, work per watt.
python -m experiments.research.sustained --dump FILE.npz       (on the H200)
python -m experiments.research.sustained --summarize FILE.npz [--csv F]   (no GPU)

The suite times each contender in blocks of 3 calls, the contenders alternating (experiments.
timing.time_blocks): the power limit answers the mix of their draws, so both run at one clock
and the ratio compares their work per clock. A stream of one product, the way a training step
runs it, lets each draw the clock down by its own power: the ratio then compares work per watt
as well. The candidate sweeps' calls back to back in rounds of ~20 calls each (runs 97-98, item
125 of docs/research/notes.md) put cuBLAS 5-12% ahead on the llama7b shapes where one call has
us level or ahead, and our clustered 256x128 tile 4-8% behind our plain 128x256 at 4096^3.

This times, at each of SHAPES, the dispatcher's schedule, v7 where that differs, and torch.matmul
in two regimes after the GPU rested REST_S seconds: SHORT blocks of 3 calls and LONG blocks of
~LONG_MS of calls, the contenders' blocks alternating (the order turning) for about DURATION_S,
nothing synchronised between them, each block between one pair of CUDA events (its time per
call, and where it ran: ms after an anchor event recorded on the idle GPU first); nvidia-smi
samples the board power and the SM clock every 20 ms meanwhile. The summary: per regime and
contender the median time per call over the blocks that start after the first SETTLE_S (the
clock's fall under load takes ~50 ms), the ratio of torch's to each schedule's, and, in the long
blocks, the median power and clock of the samples inside the contender's own blocks.
"""
from __future__ import annotations

import json
import statistics
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from experiments.research import cli

SHAPES = {"sq4096": (4096, 4096, 4096), "llama7b-qkv": (4096, 12288, 4096),
          "llama7b-up": (4096, 22016, 4096), "sq8192": (8192, 8192, 8192)}
REGIMES = {"short": 3, "long": None}       # calls a block; None: ~LONG_MS of calls
LONG_MS = 40.0
DURATION_S = 1.5
SETTLE_S = 0.3
REST_S = 3.0
SMI_TIME = "%Y/%m/%d %H:%M:%S.%f"


def _contenders(a, b):
    import torch

    import gemm
    from gemm.schedule import preset
    pick = gemm.plan(a, b).schedule
    out = {f"ours {pick.name}": (lambda x, y, s=pick: gemm.matmul(x, y, schedule=s))}
    if pick.name != "v7":
        out["ours v7"] = lambda x, y, s=preset("v7"): gemm.matmul(x, y, schedule=s)
    out["torch"] = torch.matmul
    return out


def _blocks(fns: dict, sets, calls: dict, rounds: int) -> tuple[float, list[dict]]:
    """`rounds` rounds of the contenders' blocks, the order turning, nothing synchronised between
    them (as time_blocks runs them): (the wall-clock time of an anchor event recorded on the idle
    GPU first, [{name, start, end: ms after the anchor on the GPU's clock, us: per call}])."""
    import torch
    names, marks = list(fns), []
    torch.cuda.synchronize()
    anchor = torch.cuda.Event(enable_timing=True)
    t_wall = time.time()
    anchor.record()
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, n = fns[name], calls[name]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for i in range(n):
                fn(*sets[i % len(sets)])
            end.record()
            marks.append((name, n, start, end))
    torch.cuda.synchronize()
    return t_wall, [{"name": name, "start": anchor.elapsed_time(st), "end": anchor.elapsed_time(en),
                     "us": st.elapsed_time(en) * 1e3 / n} for name, n, st, en in marks]


def dump(path: Path) -> None:
    import torch

    from experiments.bench import _operands
    from experiments.measure import provenance
    from experiments.research.power_draw import sample_while
    from experiments.timing import back_to_back_us
    record = {"provenance": provenance(), "shapes": {}}
    for shape, (m, n, k) in SHAPES.items():
        sets = [_operands(dict(m=m, n=n, k=k, batch=1, dtype="float16"), seed) for seed in range(2)]
        a, b = sets[0]
        fns = _contenders(a, b)
        ref = a.double() @ b.double()
        errors = {name: float(torch.linalg.norm(fn(a, b).double() - ref) / torch.linalg.norm(ref))
                  for name, fn in fns.items()}
        del ref
        once = {name: back_to_back_us(lambda i, f=fn: f(*sets[i % 2]), calls=5, warmup=2) for name, fn in fns.items()}
        entry = {"mnk": [m, n, k], "rel_err": errors, "regimes": {}}
        for regime, calls in REGIMES.items():
            per = {name: calls or max(3, round(LONG_MS * 1e3 / once[name])) for name in fns}
            rounds = max(2, round(DURATION_S * 1e6 / sum(per[name] * once[name] for name in fns)))
            torch.cuda.synchronize()
            time.sleep(REST_S)
            (t_wall, blocks), smi, _ = sample_while(lambda: _blocks(fns, sets, per, rounds))
            entry["regimes"][regime] = {"calls": per, "anchor_wall": t_wall, "blocks": blocks, "smi": smi}
        record["shapes"][shape] = entry
        print(shape, {r: {nm: round(statistics.median(b["us"] for b in e["blocks"] if b["name"] == nm), 1)
                          for nm in fns} for r, e in entry["regimes"].items()}, flush=True)
    np.savez_compressed(path, record=json.dumps(record))


def _samples(lines) -> list[tuple[float, float, float]]:
    """(wall-clock seconds, board power W, SM clock GHz) of each nvidia-smi sample."""
    out = []
    for line in lines:
        parts = [p.strip() for p in str(line).split(",")]
        if len(parts) != 4 or "N/A" in line:
            continue
        stamp = datetime.strptime(parts[0], SMI_TIME).timestamp()
        out.append((stamp, float(parts[1]), float(parts[2]) / 1e3))
    return out


def summarize(path: Path) -> dict:
    rec = json.loads(str(np.load(path)["record"]))
    shapes = {}
    for shape, entry in rec["shapes"].items():
        regimes = {}
        for regime, e in entry["regimes"].items():
            settled = [b for b in e["blocks"] if b["start"] >= SETTLE_S * 1e3]
            names = list(e["calls"])
            # the samples on the GPU's clock: ms after the anchor (recorded on an idle GPU, so it ran
            # within microseconds of its wall-clock time)
            samples = [((t - e["anchor_wall"]) * 1e3, w, g) for t, w, g in _samples(e["smi"])]
            row = {}
            for name in names:
                mine = [b for b in settled if b["name"] == name]
                # a short block (a few calls) runs in the mix's clock: only the long ones have their own
                inside = ([(w, g) for t, w, g in samples for b in mine if b["start"] <= t <= b["end"]]
                          if regime == "long" else [])
                row[name] = {"us": statistics.median(b["us"] for b in mine), "blocks": len(mine),
                             "calls": e["calls"][name],
                             "power_w": statistics.median(w for w, _ in inside) if inside else None,
                             "clock_ghz": statistics.median(g for _, g in inside) if inside else None}
            for name in names:
                row[name]["torch_over"] = row["torch"]["us"] / row[name]["us"]
            regimes[regime] = row
        shapes[shape] = {"mnk": entry["mnk"], "max_rel_err": max(entry["rel_err"].values()), "regimes": regimes}
    return {"provenance": rec["provenance"], "shapes": shapes}


def print_summary(s: dict) -> None:
    print("time per call after the clock settled; ratio = torch's over the contender's; power and clock "
          "inside the contender's own long blocks")
    for shape, e in s["shapes"].items():
        print(f"{shape} (max rel err {e['max_rel_err']:.1e})")
        for regime, row in e["regimes"].items():
            for name, r in row.items():
                extra = (f"  {r['power_w']:.0f} W  {r['clock_ghz']:.3f} GHz" if r["power_w"] is not None
                         and regime == "long" else "")
                print(f"  {regime:5s} {name:46s} {r['us']:9.1f} us  ratio {r['torch_over']:.3f}  "
                      f"({r['blocks']} blocks of {r['calls']}){extra}")


def csv_rows(s: dict, record) -> tuple[list[dict], str]:
    rows = [{"shape": shape, "regime": regime, "contender": name, "calls_a_block": r["calls"],
             "us_per_call": round(r["us"], 2), "torch_over_contender": round(r["torch_over"], 4),
             "power_w": "" if r["power_w"] is None else round(r["power_w"], 1),
             "sm_clock_ghz": "" if r["clock_ghz"] is None else round(r["clock_ghz"], 3)}
            for shape, e in s["shapes"].items() for regime, row in e["regimes"].items() for name, r in row.items()]
    return rows, f"short and long alternating blocks; python -m experiments.research.sustained --summarize {record}"


def main(argv=None) -> None:
    cli.run(__doc__, dump, summarize, print_summary, csv_rows, argv)


if __name__ == "__main__":
    main()
