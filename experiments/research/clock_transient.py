"""Each kernel from a rested GPU: the time of every launch while the power cap pulls the clock down.
python -m experiments.research.clock_transient --dump FILE.npz [--launches 300] [--rest 4]   (on the H200)
python -m experiments.research.clock_transient --summarize FILE.npz                         (no GPU)

Why: looped for seconds (runs 35-37, power_draw.csv) V2 takes 1.98-2.00 ms against V1's
2.09-2.12, 5-6% ahead, as the model orders them at one clock; timed as the seed times them
(run 31: 20 warm-ups, ten launches) V1 is 2.5% ahead, and the seed has V1 4% ahead. The clock
sits at 1.98 GHz while the GPU rests and the 700 W cap takes ~0.1 s to bring it down, so a
short timing window sees part of that fall. This measures it. Per kernel, after `--rest`
seconds idle: `--launches` launches back to back, a CUDA event before each and after the
last (no synchronization in between), while nvidia-smi samples the board power and the
clock every 20 ms. Two passes, the kernels in one order and then the other, so that the
order of the kernels and the GPU's warming are not taken for the kernels' own behaviour.

`--summarize`: per kernel and pass, the median TFLOPS over windows of launch numbers: the
first five; 5-35 (docs/design.md's protocol: five warm-ups, then about 30 timed); 20-30 (run 31's
protocol); and from 100 on (the steady state); the time (ms after the first launch) by which
the reported clock has come down; the median counted clock (clock probe) per window; for the
GEMMs, at launches 25, 150 and 290, the model at that launch's clock with its replayed DRAM
bytes; and V2 / V1 in each window. `--kernels` picks other kernels (runs 44-46: the loops,
deeper rings, and V1 / V3 s2 on a padded shared-memory footprint).
"""
from __future__ import annotations

import dataclasses
import time
from datetime import datetime
from pathlib import Path

import numpy as np

import sim
from experiments import catalog
from experiments.paths import write_csv
from experiments.probe import probed_launcher
from experiments.reference import random_operands
from experiments.research import cli
from experiments.research.power_draw import sample_while
from experiments.research.stamps import settled
from sim.hardware import load_profile
from sim.l2cache import probe_clock_ghz

KERNELS = ("v1", "v2", "v2-local", "v3 s2")  # by default; --kernels picks any catalog names
M = N = K = 8192
SMI_TIME = "%Y/%m/%d %H:%M:%S.%f"
STAMPED = (25, 150, 290)  # launches whose every CTA's stamps are kept (DRAM bytes by replay)
WINDOWS = {"first 5": (0, 5), "5-35": (5, 35), "20-30": (20, 30), "100+": (100, None)}


def dump(path: Path, launches: int, rest: float, kernels=KERNELS) -> None:
    """Kernels are catalog names: the GEMMs, the two halves of the seed's loop (the WGMMA-only
    and load-only loops) and, for the footprint experiment (run 45), "v1 +32KB smem": V1 with
    32 KB of shared memory per CTA it does not use."""
    import torch
    entries = {name: catalog.entry(name) for name in kernels}
    operands = {}
    for dtype in {e.dtype for e in entries.values()}:
        a, b = random_operands(M, N, K, dtype, seed=1)
        operands[dtype] = a, b.t().contiguous().t()
    launchers = {name: probed_launcher(e.kernel_config(clock_probe=True), M, N, K, launches, e.pad_bytes)[:2]
                 for name, e in entries.items()}
    for name, (run, _) in launchers.items():  # load each module and touch each kernel once, then rest
        run(*operands[entries[name].dtype])
    torch.cuda.synchronize()
    out = {}
    for pass_, order in (("forward", kernels), ("reverse", kernels[::-1])):
        for name in order:
            events = [torch.cuda.Event(enable_timing=True) for _ in range(launches + 1)]
            run, probe = launchers[name]
            a, b = operands[entries[name].dtype]

            def rest_then_launch(run=run, events=events, a=a, b=b):
                time.sleep(rest)
                t0 = datetime.now().strftime(SMI_TIME)  # nvidia-smi's clock and format: local time
                for i in range(launches):
                    events[i].record()
                    run(a, b, i)
                events[-1].record()
                events[-1].synchronize()
                return t0
            t0, lines, _ = sample_while(rest_then_launch)
            key = f"{name} {pass_}"
            out[f"ms {key}"] = np.array([events[i].elapsed_time(events[i + 1]) for i in range(launches)])
            out[f"t0 {key}"] = np.array(t0)
            out[f"smi {key}"] = np.array(lines)
            rec = probe.get().reshape(launches, -1, probe.shape[1]).astype(np.int64)
            out[f"clock {key}"] = np.median(probe_clock_ghz(rec), axis=1)  # each launch's counted clock
            out[f"kclk {key}"] = np.median(rec[..., 2] - rec[..., 0], axis=1) / 1e3
            out[f"end {key}"] = np.max(rec[..., 3], axis=1)   # each launch's last CTA's end, %globaltimer ns
            for i in STAMPED:
                # the loops' bytes are not a GEMM's; the stamps' replay reads one tile per CTA
                if i < launches and entries[name].kind == "gemm" and not entries[name].schedule.persistent:
                    out[f"stamps {key}#{i}"] = rec[i]
            ms = out[f"ms {key}"]
            print(f"{key}: first {ms[0]:.3f} ms, launches 5-35 {np.median(ms[5:35]):.3f}, "
                  f"100+ {np.median(ms[100:]):.3f}", flush=True)
    out["device"] = np.array(torch.cuda.get_device_name())
    out["kernels"] = np.array(kernels)
    np.savez_compressed(path, **out)


def _smi_series(lines, t0: str):
    """(seconds after t0, power W, reported clock GHz) of each sample."""
    start = datetime.strptime(t0, SMI_TIME)
    out = []
    for line in lines:
        parts = [p.strip() for p in str(line).split(",")]
        if len(parts) != 4 or "N/A" in line:
            continue
        stamp = datetime.strptime(parts[0], SMI_TIME)
        out.append(((stamp - start).total_seconds(), float(parts[1]), float(parts[2]) / 1e3))
    return np.array(out)


def stamped_against_model(s, ms: float, records, prof) -> dict:
    """One stamped launch: its TFLOPS, the clock and cycles per CTA of its settled waves, the
    DRAM bytes of an LRU replay of its timeline, and the model at that clock, with those
    bytes and with its own per-wave estimate."""
    st = settled(s, K, records, prof)
    at_clock = dataclasses.replace(prof, clock_ghz=st["clock_ghz"])
    return {"tflops": round(2 * M * N * K / (ms * 1e-3) / 1e12, 1), "clock_ghz": round(st["clock_ghz"], 3),
            "kclk_per_cta": st["kclk"], "replayed_dram_gb": round(st["replayed_bytes"] / 1e9, 2),
            "model_tflops": round(sim.predict(s, M, N, K, gpu=at_clock, hbm_read_bytes=st["replayed_bytes"],
                                              hbm_read_source="replayed stamps").tflops, 1),
            "model_tflops_per_wave_bytes": round(sim.predict(s, M, N, K, gpu=at_clock, reuse="per-wave").tflops, 1)}


def counted_down_ms(ms, clocks) -> float:
    """When the counted clock falls: the start (ms after the first launch began) of the first
    launch whose clock is below the midpoint of the first five launches' and the settled
    (100+) clock. What sim/load_clock.py's down_ms is."""
    early, settled = float(np.median(clocks[:5])), float(np.median(clocks[100:]))
    below = np.flatnonzero(np.asarray(clocks) < (early + settled) / 2)
    return round(float(np.sum(ms[:below[0]])), 1) if len(below) else float("nan")


def summarize(path: Path) -> list[dict]:
    prof = load_profile("h200-sxm")
    z = np.load(path)
    rows = []
    kernels = [str(k) for k in z["kernels"]] if "kernels" in z.files else KERNELS
    for pass_ in ("forward", "reverse"):
        for name in kernels:
            key = f"{name} {pass_}"
            if f"ms {key}" not in z.files:
                continue
            ms = z[f"ms {key}"]
            row = {"kernel": name, "pass": pass_}
            for label, (lo, hi) in WINDOWS.items():
                if lo >= len(ms):
                    continue
                row[f"tflops {label}"] = round(2 * M * N * K / (float(np.median(ms[lo:hi])) * 1e-3) / 1e12, 1)
                if f"clock {key}" in z.files:
                    row[f"clock {label}"] = round(float(np.median(z[f"clock {key}"][lo:hi])), 3)
            if f"clock {key}" in z.files and len(ms) > 100:
                row["counted_down_ms"] = counted_down_ms(ms, z[f"clock {key}"])
            smi = _smi_series(z[f"smi {key}"], str(z[f"t0 {key}"]))
            busy = smi[(smi[:, 0] >= 0) & (smi[:, 0] <= ms.sum() / 1e3)]
            steady = float(np.median(busy[len(busy) // 2:, 2])) if len(busy) else float("nan")
            down = busy[busy[:, 2] <= steady + 0.03]
            row["steady_smi_clock_ghz"] = round(steady, 3)
            row["clock_down_ms"] = round(float(down[0, 0]) * 1e3) if len(down) else None
            row["launches_ms"] = round(float(ms.sum()), 1)
            for i in STAMPED:
                if f"stamps {key}#{i}" in z.files:
                    got = stamped_against_model(catalog.schedule(name), float(ms[i]), z[f"stamps {key}#{i}"], prof)
                    row.update({f"{col} #{i}": v for col, v in got.items()})
            rows.append(row)
    return rows


def main(argv=None):
    ap = cli.dump_summarize_parser(__doc__, "time every launch of each kernel from a rested GPU")
    ap.add_argument("--launches", type=int, default=300)
    ap.add_argument("--rest", type=float, default=4.0, help="seconds idle before each kernel")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="with --dump: comma-separated names from "
                    "experiments.catalog (default %(default)s)")
    args = cli.parse(ap, argv)
    if args.dump:
        kernels = tuple(k.strip() for k in args.kernels.split(","))
        for k in kernels:
            try:
                catalog.entry(k)
            except ValueError as e:
                ap.error(str(e))
        dump(args.dump, args.launches, args.rest, kernels)
    rows = summarize(args.record)
    if args.csv:
        write_csv(args.csv, rows, "TFLOPS of each launch from a rested GPU, medians by window of launch numbers; "
                      f"python -m experiments.research.clock_transient --summarize {args.record}")
    print(f"{'kernel':24s} {'pass':8s} " + " ".join(f"{w:>8s}" for w in WINDOWS) + "  smi GHz  down by"
          "   counted GHz by window")
    for r in rows:
        print(f"{r['kernel']:24s} {r['pass']:8s} " + " ".join(f"{r.get(f'tflops {w}', float('nan')):8.1f}" for w in WINDOWS)
              + f"  {r['steady_smi_clock_ghz']:7.3f}  {r['clock_down_ms']} ms  "
              + " ".join(f"{r[f'clock {w}']:.3f}" for w in WINDOWS if f"clock {w}" in r))
    if any(f"model_tflops #{i}" in r for r in rows for i in STAMPED):
        print("stamped launches: TFLOPS / counted GHz / kclk per CTA / replayed DRAM GB -> the model at that clock "
              "with those bytes (with its per-wave bytes)")
        for r in rows:
            print(f"{r['kernel']:9s} {r['pass']:8s} " + " | ".join(
                f"#{i} {r[f'tflops #{i}']:.0f}/{r[f'clock_ghz #{i}']:.3f}/{r[f'kclk_per_cta #{i}']:.0f}/"
                f"{r[f'replayed_dram_gb #{i}']:.2f} -> {r[f'model_tflops #{i}']:.0f} ({r[f'model_tflops_per_wave_bytes #{i}']:.0f})"
                for i in STAMPED if f"model_tflops #{i}" in r))
    for pass_ in ("forward", "reverse"):
        by = {r["kernel"]: r for r in rows if r["pass"] == pass_}
        if "v1" in by and "v2" in by:
            print(f"V2 / V1 ({pass_}): " + ", ".join(
                f"{w} {by['v2'][f'tflops {w}'] / by['v1'][f'tflops {w}']:.3f}" for w in WINDOWS
                if f"tflops {w}" in by["v1"]))


if __name__ == "__main__":
    main()
