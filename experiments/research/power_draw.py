"""Board power against activity: each kernel looped for a few seconds while nvidia-smi samples.
python -m experiments.research.power_draw --dump FILE.npz [--seconds 3]   (on the H200)
python -m experiments.research.power_draw --summarize FILE.npz            (no GPU)

The clock a schedule earns is set by the 700 W cap, and fits of the cap alone against the
clock (experiments/research/fit_power.py, seventh and twelfth passes) could not separate what draws
the power. This measures the power itself. Each kernel (8192^3 fp16, B [N, K]) runs back to
back for `--seconds` after 20 warm-ups, while `nvidia-smi -lms 20` records the board power,
the SM clock and the temperature; the last launch is stamped by the clock probe. First the
idle GPU is sampled for a second.

Kernels: the WGMMA-only loops (tensor work, no L2 traffic) and the load-only loops (L2 and DRAM
traffic, no tensor work; they run at the maximum clock) of experiments.calibrate_clock, and six
GEMMs at the seed's tile.
`--summarize` gives per kernel the median power and clock over the second half of its loop,
the tensor activity per clock (its TFLOPS over the peak at its clock), the L2 -> SM TB/s (every
CTA's A and B panels over the time) and the DRAM TB/s (the LRU replay of the stamped launch).
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np

from experiments import catalog
from experiments.paths import write_csv
from experiments.probe import probed_launcher
from experiments.reference import random_operands
from experiments.research import cli
from experiments.research.stamps import settled
from sim.hardware import load_profile

GPU = "h200-sxm"
M = N = K = 8192
SMI_FIELDS = "timestamp,power.draw.instant,clocks.sm,temperature.gpu"
KERNELS = catalog.MMA_LOOPS + catalog.LOAD_LOOPS + ("v1", "v2", "v2-local", "v2 s3", "v3 s2", "v3 s3")


def sample_while(seconds_fn, memory_power: bool = False):
    """Run seconds_fn() while nvidia-smi samples: (its result, the sample lines, and with
    `memory_power` the lines of `nvidia-smi -q -d POWER` every 100 ms, which alone reports the
    memory's own power: see memory_power_w)."""
    cmds = [["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits", "-lms", "20"]]
    if memory_power:
        cmds.append(["nvidia-smi", "-q", "-d", "POWER", "-lms", "100"])
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, text=True) for c in cmds]
    try:
        result = seconds_fn()
    finally:
        outs = []
        for proc in procs:
            proc.terminate()
            outs.append(proc.communicate(timeout=10)[0].strip().splitlines())
    return result, outs[0], outs[1] if memory_power else []


def memory_power_w(detail_lines) -> float | None:
    """Median over the second half of the 'GPU Memory Power Readings' average power draws (W)
    in `nvidia-smi -q -d POWER` output; None when the section or its values are missing."""
    values, in_memory = [], False
    for line in detail_lines:
        text = line.strip()
        if text.endswith("Power Readings"):
            in_memory = text == "GPU Memory Power Readings"
        elif in_memory and text.startswith("Average Power Draw"):
            try:
                values.append(float(text.split(":")[1].split()[0]))
            except (IndexError, ValueError):  # N/A
                pass
    half = values[len(values) // 2:]
    return round(float(np.median(half)), 1) if half else None


def looped(run, a, b, seconds: float) -> tuple[int, float]:
    """Launch run(a, b) back to back, 20 at a time, for `seconds`: (launches, total ms by events)."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0, n = time.time(), 0
    start.record()
    while time.time() - t0 < seconds:
        for _ in range(20):
            run(a, b)
        n += 20
        torch.cuda.synchronize()
    end.record()
    end.synchronize()
    return n, start.elapsed_time(end)


def measure_looped(key: str, config, m: int, n: int, k: int, a, b, seconds: float, memory_power: bool) -> dict:
    """One kernel: 20 warm-ups, then looped for `seconds` while nvidia-smi samples. The record's
    entries under `key`: the samples (smi, and detail with `memory_power`), the mean ms per
    launch, and the last launch's clock-probe stamps."""
    import torch
    run, probe, _ = probed_launcher(config, m, n, k)
    for _ in range(20):
        run(a, b)
    torch.cuda.synchronize()
    (launches, ms_total), lines, detail = sample_while(lambda: looped(run, a, b, seconds), memory_power)
    out = {f"smi {key}": np.array(lines), f"ms {key}": np.array([ms_total / launches]), f"probe {key}": probe.get()}
    if memory_power:
        out[f"detail {key}"] = np.array(detail)
    print(f"{key}: {launches} launches, {ms_total / launches:.3f} ms each, {len(lines)} samples", flush=True)
    return out


def dump(path: Path, seconds: float, match: list[str], memory_power: bool = False) -> None:
    a, b = random_operands(M, N, K, "float16", seed=1)
    b = b.t().contiguous().t()
    out = {}
    _, idle, detail = sample_while(lambda: time.sleep(1.0), memory_power)
    out["smi idle"] = np.array(idle)
    if memory_power:
        out["detail idle"] = np.array(detail)
    for name in KERNELS:
        if match and not any(t in name for t in match):
            continue
        config = catalog.entry(name).kernel_config(clock_probe=True)
        out.update(measure_looped(name, config, M, N, K, a, b, seconds, memory_power))
    np.savez_compressed(path, **out)


def smi_medians(lines) -> dict:
    """Median power (W), SM clock (GHz) and temperature over the second half of the samples."""
    rows = [ln.split(", ") for ln in lines]
    rows = [r for r in rows if len(r) == 4 and all(x.strip() not in ("[N/A]", "") for x in r[1:])]
    half = rows[len(rows) // 2:]
    col = lambda i: float(np.median([float(r[i]) for r in half]))  # noqa: E731
    return {"power_w": round(col(1), 1), "smi_clock_ghz": round(col(2) / 1e3, 3), "temp_c": round(col(3), 1),
            "samples": len(half)}


def summarize(path: Path) -> list[dict]:
    prof = load_profile(GPU)
    z = np.load(path)
    mem = lambda key: ({"memory_power_w": memory_power_w(z[f"detail {key}"])}  # noqa: E731
                       if f"detail {key}" in z.files else {})
    rows = [{"kernel": "idle", "kind": "idle", **smi_medians(z["smi idle"]), **mem("idle")}]
    for name in KERNELS:
        if f"ms {name}" not in z.files:
            continue
        entry = catalog.entry(name)
        s, kind = entry.schedule, entry.kind
        ms = float(z[f"ms {name}"][0])
        st = settled(s, K, z[f"probe {name}"], prof, loads=kind != "mma")
        ghz = st["clock_ghz"]
        tflops = 2 * M * N * K / (ms * 1e-3) / 1e12
        l2_tbs = 0.0 if kind == "mma" else M * N * K * 2 * (1 / s.block_m + 1 / s.block_n) / (ms * 1e-3) / 1e12
        dram_tbs = 0.0 if kind == "mma" else st["replayed_bytes"] / (ms * 1e-3) / 1e12
        rows.append({"kernel": name, "kind": kind, **smi_medians(z[f"smi {name}"]), **mem(name), "ms": round(ms, 4),
                     "probe_clock_ghz": round(ghz, 3),
                     "tensor_util_per_clock": 0.0 if kind == "load" else round(
                         tflops * 1e12 / (prof.sm_count * prof.tensor_flops_per_clk * ghz * 1e9), 4),
                     "l2_to_sm_tbs": round(l2_tbs, 2), "dram_tbs": round(dram_tbs, 2)})
    return rows


def parse_power_cli(doc: str, dump_help: str, seconds: float, match_help: str, argv=None, more_arguments=None):
    """The command line power_draw and power_sweep share: --dump/--summarize/--csv, the seconds
    per kernel, --match, --memory-power; `more_arguments(parser)` adds a caller's own."""
    ap = cli.dump_summarize_parser(doc, dump_help)
    if more_arguments:
        more_arguments(ap)
    ap.add_argument("--seconds", type=float, default=seconds)
    ap.add_argument("--match", action="append", default=[], metavar="TEXT", help=f"with --dump: {match_help}")
    ap.add_argument("--memory-power", action="store_true", help="with --dump: also sample the memory's own power")
    return cli.parse(ap, argv)


def dump_then_summarize(args, dump_fn, summarize_fn, csv_comment: str, module: str) -> list[dict]:
    """--dump (on the H200) if asked, then the summary rows of the record, written to --csv
    under a comment that names the command (python -m `module` --summarize RECORD)."""
    if args.dump:
        dump_fn(args.dump, args.seconds, args.match, args.memory_power)
    rows = summarize_fn(args.record)
    if args.csv:
        write_csv(args.csv, rows, f"{csv_comment}; python -m {module} --summarize {args.record}")
    return rows


def main(argv=None):
    args = parse_power_cli(__doc__, "loop the kernels while nvidia-smi samples", 3.0,
                           "only the kernels whose name contains TEXT (repeatable)", argv)
    rows = dump_then_summarize(args, dump, summarize, "board power (nvidia-smi power.draw.instant, every 20 ms, median "
                               "of the second half) of each kernel looped after 20 warm-ups", "experiments.research.power_draw")
    print_power_rows(rows, f"{'kernel':26s}", lambda r: f"{r['kernel']:26s}")


def print_power_rows(rows, header: str, lead) -> None:
    """One line per row: lead(row), then the power, clocks, temperature and activity columns."""
    print(f"{header} {'W':>6s} {'GHz':>5s} {'probe':>5s} {'degC':>5s} {'u/clk':>6s} {'L2 TB/s':>8s} {'DRAM':>5s}")
    for r in rows:
        print(f"{lead(r)} {r['power_w']:6.1f} {r['smi_clock_ghz']:5.2f} {r.get('probe_clock_ghz', 0):5.2f} "
              f"{r['temp_c']:5.1f} {r.get('tensor_util_per_clock', 0):6.3f} {r.get('l2_to_sm_tbs', 0):8.2f} "
              f"{r.get('dram_tbs', 0):5.2f}" + (f" {r['memory_power_w']:6.1f} W memory" if r.get("memory_power_w") else ""))


if __name__ == "__main__":
    main()
