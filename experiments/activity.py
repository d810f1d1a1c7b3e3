"""What each kernel does per SM clock, as Nsight Compute counts it, beside the clock it starts at.
Run under Nsight Compute (experiments/device_activity.sh):

  ncu --nvtx --nvtx-include "measured/" --set full --page raw --clock-control none \\
      --cache-control none --csv python3 -m experiments.activity --labels L
  python -m experiments.activity --summarize DIR [--csv FILE]          (no GPU)

Why: from a rested GPU the kernels start at clocks that neither their tensor work nor their
L2 bytes per clock order (runs 44-46, experiments/NOTES.md 53-55): V3 s2 at 1.39-1.42 GHz and
V3 s3 at 1.25 do the same work per clock; the WGMMA-only loop, as busy on the tensor cores,
starts at 1.64. Something else the schedule does sets it. This profiles each kernel of those
runs with every counter of Nsight Compute's full set (each launch replayed pass by pass, the
clock left alone) and ranks the counters, as rates per SM cycle, by how well they order the
early clocks, and by how far apart they put V3 s2 and V3 s3.

`--labels`: launches each kernel of KERNELS (warmed up outside the profiled range) `--repeat`
times inside an NVTX range "measured", and writes the names in launch order to the JSON file.
`--summarize DIR`: reads DIR/ncu.csv (the raw page: one row per launch, one column per
counter) and DIR/labels.json; the early clocks come from the clock_transient logs (EARLY_RUNS).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import statistics as st
import time
from pathlib import Path

import numpy as np

LOGS = Path(__file__).with_name("results") / "h200-sxm" / "logs"
M_FULL = 8192
KERNELS = ("v1", "v2", "v2-local", "v2 s3", "v2 s4", "v3 s2", "v3 s3", "v3 s4",
           "mma loop 128x128x64 s2", "load loop 128x128x64 s2")
# Run 48: the clock form is fitted on CALIBRATION alone (the WGMMA-only loops, and GEMMs that
# are not the seed's V1 / V2 / V3 at 128x128x64: other versions, tiles and rasters) and tested
# on HELD_OUT (the seed's kernels, and V1 / V2 / V3 s2 on a padded shared-memory footprint);
# the load-only loops run at the top clock and only check that the form lets them.
CALIBRATION = ("mma loop 128x128x64 s2", "mma loop 128x128x64 s3", "mma loop 128x128x64 s4",
               "mma loop 128x192x64 s2", "mma loop 64x128x64 s2", "mma loop v3 128x128x64 s2",
               "mma loop v3 128x128x64 s4", "mma loop v4 128x128x64 s4", "mma loop v5 128x128x64 s3",
               "mma loop v5 128x128x64 s4", "v4 s2", "v5 s3", "v5 s4", "v5 128x256 s4",
               "v5 128x256 s4 grouped", "v1 128x192", "v2 128x192 s2", "v1 64x256", "v2 64x256 s2",
               "v2 64x256 s2 row")
HELD_OUT = ("v1", "v2", "v2-local", "v2 s3", "v2 s4", "v3 s2", "v3 s3", "v3 s4",
            "v1 +32KB smem", "v2 +32KB smem", "v3 s2 +32KB smem")
TOP_CLOCK = ("load loop 128x128x64 s1", "load loop 128x128x64 s2", "load loop 128x128x64 s3",
             "load loop 128x128x64 s4")
# the counters run 48 needs (one or two replay passes, so each launch runs nearly as it would alone)
METRICS = ("gpu__time_duration.sum,smsp__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg,"
           "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,"
           "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.avg.pct_of_peak_sustained_elapsed")
# clock_transient runs whose "clock first 5" (counted GHz, first five launches after 4 s idle)
# give each kernel's early clock; a kernel in several runs takes the median over them
EARLY_RUNS = ("run38", "run39", "run44", "run45", "run46")
CYCLES = "sm__cycles_elapsed.avg"  # per SM; the denominator of every per-cycle rate


def early_clocks(logs: Path = LOGS) -> dict[str, float]:
    """{kernel: median counted GHz over its first five launches after a rest, all passes and runs}."""
    seen: dict[str, list[float]] = {}
    for run in EARLY_RUNS:
        path = logs / run / "clock_transient.csv"
        if not path.exists():
            continue
        with path.open() as f:
            for r in csv.DictReader(ln for ln in f if not ln.startswith("#")):
                if r.get("clock first 5"):
                    seen.setdefault(r["kernel"], []).append(float(r["clock first 5"]))
    return {k: st.median(v) for k, v in seen.items()}


def read_raw(path: Path) -> list[dict]:
    """Nsight Compute's raw page (--page raw --csv): {counter: value} per profiled launch, in
    launch order; counters whose value is not a number are dropped."""
    lines = [ln for ln in Path(path).read_text().splitlines() if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, data = rows[0], rows[2:]  # rows[1]: the units
    out = []
    for r in data:
        vals = {}
        for name, v in zip(header, r):
            try:
                vals[name] = float(v.replace(",", ""))
            except ValueError:
                pass
        out.append(vals)
    ids = [int(v["ID"]) for v in out] if out and "ID" in out[0] else list(range(len(out)))
    return [v for _, v in sorted(zip(ids, out), key=lambda t: t[0])]


def per_cycle(launch: dict) -> dict:
    """Each additive counter (.sum) as a rate per SM per SM cycle; ratios and averages kept as they are."""
    cyc = launch.get(CYCLES)
    sms = launch.get("device__attribute_multiprocessor_count") or 132
    out = {}
    for name, v in launch.items():
        if name == "ID":
            continue
        if name.endswith(".sum") and cyc:
            out[name + " /sm/clk"] = v / sms / cyc
        elif not name.endswith(".sum"):
            out[name] = v
    return out


def _spearman(x, y) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def summarize(logs: Path, out_csv: Path | None = None, top: int = 25) -> dict:
    meta = json.loads((logs / "labels.json").read_text())
    launches = read_raw(logs / "ncu.csv")
    if len(launches) != len(meta["labels"]):
        raise ValueError(f"{logs}: {len(launches)} profiled launches for {len(meta['labels'])} labels")
    by_kernel: dict[str, list[dict]] = {}
    for name, launch in zip(meta["labels"], launches):
        by_kernel.setdefault(name, []).append(per_cycle(launch))
    rates = {k: {c: st.median(r[c] for r in rs) for c in rs[0] if all(c in r for r in rs)}
             for k, rs in by_kernel.items()}
    early = early_clocks()
    known = [k for k in rates if k in early]
    counters = sorted(set.intersection(*(set(rates[k]) for k in rates)))
    ranked = []
    for c in counters:
        x = np.array([rates[k][c] for k in known])
        if np.ptp(x) <= 1e-12 * max(1.0, np.abs(x).max()):
            continue
        row = {"counter": c, "spearman_vs_early_clock": round(_spearman(x, [early[k] for k in known]), 3)}
        if {"v3 s2", "v3 s3"} <= set(rates) and rates["v3 s2"][c]:
            row["v3_s3_over_v3_s2"] = round(rates["v3 s3"][c] / rates["v3 s2"][c], 4)
        row.update({k: rates[k][c] for k in rates})
        ranked.append(row)
    ranked.sort(key=lambda r: r["spearman_vs_early_clock"])
    if out_csv:
        fields = ["counter", "spearman_vs_early_clock", "v3_s3_over_v3_s2", *rates]
        with Path(out_csv).open("w", newline="") as f:
            f.write(f"# per-SM-cycle rates of Nsight Compute's full set, one column per kernel (median over "
                    f"{meta['repeat']} launches), ranked by Spearman correlation with the early clock "
                    f"(clock_transient runs {', '.join(EARLY_RUNS)}: "
                    + "; ".join(f"{k} {early[k]:.3f}" for k in known)
                    + f"); python -m experiments.activity --summarize {logs}; {json.dumps(meta['info'])}\n")
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(ranked)
    return {"info": meta["info"], "early": {k: early[k] for k in known}, "rates": rates, "ranked": ranked,
            "top": top}


def _print(res: dict) -> None:
    early, ranked = res["early"], res["ranked"]
    order = sorted(early, key=early.get)
    print("early clock (GHz): " + ", ".join(f"{k} {early[k]:.3f}" for k in order))
    print("counters most against the early clock (more per clock, lower clock), then most with it:")
    shown = ranked[:res["top"]] + ranked[max(res["top"], len(ranked) - 10):]
    print(f"{'rho':>6s} {'s3/s2':>6s}  counter  |  " + "  ".join(k[:10] for k in order))
    for r in shown:
        print(f"{r['spearman_vs_early_clock']:6.2f} {r.get('v3_s3_over_v3_s2', float('nan')):6.3f}  {r['counter'][:70]:70s}"
              + "  ".join(f"{r[k]:10.4g}" for k in order))
    apart = sorted((r for r in ranked if "v3_s3_over_v3_s2" in r and np.isfinite(r["v3_s3_over_v3_s2"])),
                   key=lambda r: -abs(np.log(max(r["v3_s3_over_v3_s2"], 1e-9))))
    print("counters that put V3 s3 furthest from V3 s2 (same tensor work per clock, 12% lower early clock):")
    for r in apart[:res["top"]]:
        print(f"  {r['v3_s3_over_v3_s2']:7.3f}  rho {r['spearman_vs_early_clock']:5.2f}  {r['counter']}")


TENSOR = "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.avg.pct_of_peak_sustained_elapsed"
CAPPED_BELOW = 1.75  # GHz counted: WGMMA kernels count at most ~1.80 (0.91 x 1.98) when nothing holds them
TOP_GHZ = 2.0  # what the solved clock may reach (the boost clock is 1.98)


def activities(launch: dict) -> dict:
    """One launch: counted clock f (GHz), tensor use per clock u, L2 -> SM read and DRAM TB/s."""
    t = launch["gpu__time_duration.sum"] * 1e-9
    return {"f": launch["smsp__cycles_elapsed.avg.per_second"] / 1e9, "u": launch[TENSOR] / 100,
            "L": launch["lts__t_sectors_srcunit_tex_op_read.sum"] * 32 / t / 1e12,
            "H": (launch["dram__bytes_read.sum"] + launch["dram__bytes_write.sum"]) / t / 1e12}


def kernel_activities(dirs) -> dict[str, dict]:
    """{kernel: median activities over its launches} from runs written by --labels under ncu."""
    seen: dict[str, list[dict]] = {}
    for d in dirs:
        meta = json.loads((Path(d) / "labels.json").read_text())
        for name, launch in zip(meta["labels"], read_raw(Path(d) / "ncu.csv"), strict=True):
            seen.setdefault(name, []).append(activities(launch))
    return {k: {q: st.median(a[q] for a in v) for q in v[0]} for k, v in seen.items()}


def clock_fits(acts: dict) -> list[dict]:
    """Each form fitted on the capped CALIBRATION kernels; every kernel's clock solved from its
    own measured activity per clock; errors on the calibration set and on HELD_OUT."""
    from sim import clock
    calib = [k for k in CALIBRATION if k in acts and acts[k]["f"] < CAPPED_BELOW]
    out = []
    for g in (2.0, 2.5, 3.0, 3.5):
        for volt in (False, True):
            c = clock.fit([(acts[k]["u"], acts[k]["L"], acts[k]["H"], acts[k]["f"]) for k in calib], g,
                          l2_on_voltage=volt)
            got = {k: clock.earned_clock(a["u"], a["L"], a["H"], a["f"], c, g, TOP_GHZ, l2_on_voltage=volt)
                   for k, a in acts.items()}
            err = {k: got[k] / acts[k]["f"] - 1 for k in acts}
            held = [abs(err[k]) for k in HELD_OUT if k in err]
            out.append({"g": g, "l2_on_voltage": volt, "coef": c.tolist(), "calibration": calib,
                        "calibration_rms": float(np.sqrt(np.mean([err[k] ** 2 for k in calib]))),
                        "held_out_median": st.median(held) if held else None,
                        "held_out_max": max(held) if held else None, "clock": got, "err": err})
    return out


# Run 51: the load-only loop where its panels fit in L2 (one wave at each residency; A and B
# 15-24 MB against the ~35 MB an LRU keeps), so that nearly every byte hits: the L2 -> SM port's
# hit rate, which the DRAM-heavy loops of run 48 leave traded against a miss's cost.
L2_RESIDENT = {  # label: (catalog name, M, N, K); CTAs = one wave at the loop's CTAs per SM
    "load loop s1 L2-resident": ("load loop 128x128x64 s1", 3072, 4224, 1024),  # 24 x 33 = 792 = 132 x 6
    "load loop s2 L2-resident": ("load loop 128x128x64 s2", 2304, 2816, 2048),  # 18 x 22 = 396 = 132 x 3
    "load loop s3 L2-resident": ("load loop 128x128x64 s3", 1536, 2816, 2048),  # 12 x 22 = 264 = 132 x 2
    "load loop s4 L2-resident": ("load loop 128x128x64 s4", 1536, 1408, 4096),  # 12 x 11 = 132
}
def _padded(version: str, stages: int, pad_kb: int) -> tuple:
    from gemm.schedule import preset
    return (preset(version, stages=stages), "gemm", pad_kb * 1024), M_FULL, M_FULL, M_FULL


# Run 52: which rings lose their L2 reuse, the same kernels at fewer CTAs per SM (unused shared
# memory per CTA, as run 45) and deeper: label "v2 s2 @3" = V2, 2 stages, 3 CTAs per SM, i.e.
# 6 stages of loads per SM.
RESIDENCY = {
    "v2 s2 @3": _padded("v2", 2, 0), "v2 s2 @2": _padded("v2", 2, 32), "v2 s2 @1": _padded("v2", 2, 64),
    "v2 s3 @2": _padded("v2", 3, 0), "v2 s3 @1": _padded("v2", 3, 32), "v2 s4 @1": _padded("v2", 4, 0),
    "v2 s6 @1": _padded("v2", 6, 0),
    "v3 s2 @2": _padded("v3", 2, 0), "v3 s2 @1": _padded("v3", 2, 64), "v3 s3 @2": _padded("v3", 3, 0),
    "v3 s3 @1": _padded("v3", 3, 32), "v3 s6 @1": _padded("v3", 6, 0),
}
SEQUENCE = 250           # run 49: launches back to back per kernel, after a rest ...
PROFILED_AT = (0, 30, 120, 240)  # ... of which these are profiled: rested, the seed's window, falling, settled
SEQUENCE_KERNELS = ("v1", "v2", "v2-local", "v3 s2", "v3 s3")
REST_S = 3.0


def launch(labels_path: Path, repeat: int, warmups: int = 5, kernels=KERNELS, sequence: int = 0,
           profiled_at=PROFILED_AT, shapes=None) -> None:
    """Each kernel `repeat` times inside an NVTX range "measured" after `warmups`; or, with
    `sequence`, after a rest, `sequence` launches back to back of which those at `profiled_at`
    are in the range (labels "name #i"). `shapes`: {label: (catalog name, M, N, K)} instead
    of `kernels` at 8192^3 (the operands are corners of the 8192^3 ones); the catalog name may
    be a (schedule, kind, unused shared bytes) of its own."""
    import torch
    from torch.cuda import nvtx

    from gemm.kernels import KernelConfig

    from .clock_transient import M, N, K, _catalog
    from .probe import probed_launcher
    from .reference import random_operands
    a, b = random_operands(M, N, K, "float16", seed=1)
    b = b.t().contiguous().t()
    catalog = _catalog()
    labels = []
    shapes = shapes or {name: (name, M, N, K) for name in kernels}
    for name, (entry, m, n, k) in shapes.items():
        s, kind, pad = catalog[entry] if isinstance(entry, str) else entry
        launcher = probed_launcher(KernelConfig(s, "float16", "k", "k", clock_probe=True, mma_loop_only=kind == "mma",
                                                load_loop_only=kind == "load"), m, n, k, 1, pad)[0]
        a_mk, b_kn = a[:m, :k], b[:k, :n]
        run = lambda _a, _b, launcher=launcher, a_mk=a_mk, b_kn=b_kn: launcher(a_mk, b_kn)  # noqa: E731
        for _ in range(warmups):
            run(a, b)
        torch.cuda.synchronize()
        if sequence:
            time.sleep(REST_S)
            for i in range(sequence):
                if i in profiled_at:
                    nvtx.range_push("measured")
                run(a, b)
                if i in profiled_at:
                    nvtx.range_pop()
                    labels.append(f"{name} #{i}")
            torch.cuda.synchronize()
            print(name, flush=True)
            continue
        for _ in range(repeat):
            nvtx.range_push("measured")
            run(a, b)
            torch.cuda.synchronize()
            nvtx.range_pop()
            labels.append(name)
        print(name, flush=True)
    info = {"gpu": torch.cuda.get_device_name(), "m": M, "n": N, "k": K, "warmups": warmups, "sequence": sequence,
            "profiled_at": list(profiled_at) if sequence else None}
    Path(labels_path).write_text(json.dumps({"info": info, "repeat": repeat, "labels": labels}))


LOAD_LOOPS_8192 = {f"load loop 128x128x64 s{i}": (f"load loop 128x128x64 s{i}", M_FULL, M_FULL, M_FULL)
                   for i in (1, 2, 3, 4)}
LOOP_CTAS = {"s1": 6, "s2": 3, "s3": 2, "s4": 1}  # the load-only loops' CTAs per SM (~24 registers, smem alone)


def launches_by_label(run_dir: Path, shapes: dict) -> dict:
    """{label: ((catalog name, M, N, K), DRAM read bytes, counted GHz, ms)}: medians over the
    label's profiled launches, for the labels in `shapes`."""
    meta = json.loads((Path(run_dir) / "labels.json").read_text())
    seen: dict[str, list] = {}
    for name, launch_ in zip(meta["labels"], read_raw(Path(run_dir) / "ncu.csv"), strict=True):
        seen.setdefault(name, []).append((launch_["dram__bytes_read.sum"],
                                          launch_["smsp__cycles_elapsed.avg.per_second"] / 1e9,
                                          launch_["gpu__time_duration.sum"] / 1e6))
    return {n: (shapes[n], *(st.median(x[i] for x in v) for i in range(3))) for n, v in seen.items() if n in shapes}


def model_over_measured(row, prof, **port) -> float:
    """The model's time for one profiled kernel (at its counted clock, with its measured DRAM
    bytes, the port set by `port`) over the measured, less the launch cost ncu does not time."""
    import dataclasses

    import sim
    (entry, m, n, k), dram, f, ms = row
    s, kind, _ = _catalog_entry(entry)
    g = dataclasses.replace(prof, clock_ghz=f, **port)
    extra = {"mmas": False, "ctas_per_sm": LOOP_CTAS[entry.split()[-1]]} if kind == "load" else {}
    p = sim.predict(s, m, n, k, gpu=g, hbm_read_bytes=dram, hbm_read_source="Nsight Compute", **extra)
    return (p.ms - g.launch_us * 1e-3) / ms


def _catalog_entry(name):
    if not isinstance(name, str):  # a (schedule, kind, unused shared bytes) of its own
        return name
    from .clock_transient import _catalog
    return _catalog()[name]


def port_fits(logs: Path = LOGS, gpu: str = "h200-sxm") -> dict:
    """The L2 -> SM port from the load-only loops alone, with their measured misses: the hit
    rate (B/ns, the 0.9 ns request kept) from the L2-resident loops at 3, 2 and 1 CTAs per SM
    (run 51; minimax), then a miss's cost at that rate from the DRAM-heavy 8192^3 loops (run 48;
    minimax); each GEMM of run 48 held out, at its counted clock with its DRAM bytes."""
    from sim.hardware import load_profile
    prof = load_profile(gpu)
    hits = {n: r for n, r in launches_by_label(logs / "run51", L2_RESIDENT).items() if "s1" not in n}
    heavy = launches_by_label(logs / "run48", LOAD_LOOPS_8192)
    gemms = launches_by_label(logs / "run48", {n: (n, M_FULL, M_FULL, M_FULL) for n in CALIBRATION + HELD_OUT
                                              if _catalog_entry(n)[1] == "gemm" and not _catalog_entry(n)[2]})
    worst = lambda rows, **port: max(abs(model_over_measured(r, prof, **port) - 1) for r in rows.values())  # noqa: E731
    rate = min(range(150, 321, 5), key=lambda b: worst(hits, l2_sm_bytes_per_ns=float(b)))
    miss = min((round(0.1 * i, 1) for i in range(0, 21)),
               key=lambda x: worst(heavy, l2_sm_bytes_per_ns=float(rate), l2_miss_port_factor=x))
    fitted = {"l2_sm_bytes_per_ns": float(rate), "l2_miss_port_factor": miss}
    table = {}
    for label, rows in (("L2-resident loops", hits), ("DRAM-heavy loops", heavy), ("GEMMs (held out)", gemms)):
        for n, r in rows.items():
            table[n] = {"set": label, "profile": model_over_measured(r, prof) - 1,
                        "fitted": model_over_measured(r, prof, **fitted) - 1}
    return {"fitted": fitted, "profile": {"l2_sm_bytes_per_ns": prof.l2_sm_bytes_per_ns,
                                          "l2_miss_port_factor": prof.l2_miss_port_factor}, "rows": table,
            "chain": {n: earned_against_measured(r, prof, **fitted) for n, r in gemms.items() if n in HELD_OUT}}


def earned_against_measured(row, prof, **port) -> dict:
    """predict(clock="earned") for one profiled GEMM given only its measured DRAM bytes (the clock
    and the time both the model's), beside the clock it counted and its TFLOPS."""
    import dataclasses

    import sim
    (entry, m, n, k), dram, f, ms = row
    g = dataclasses.replace(prof, **port)
    p = sim.predict(_catalog_entry(entry)[0], m, n, k, gpu=g, clock="earned", hbm_read_bytes=dram,
                    hbm_read_source="Nsight Compute")
    return {"clock": p.clock_ghz, "measured_clock": f, "tflops": 2 * m * n * k / ((p.ms - g.launch_us * 1e-3) * 1e9),
            "measured_tflops": 2 * m * n * k / (ms * 1e9)}


def dram_against_models(logs: Path = LOGS, gpu: str = "h200-sxm") -> list[dict]:
    """The scoreboard for a model of the reuse rings lose: each GEMM of runs 48 and 52 (at its
    residency; run 52's padded down), its DRAM read bytes over the profiled launches (min,
    median, max) beside the per-wave estimate and the GPU-wide timeline's."""
    from sim import timeline
    from sim.engines import grid, memory_traffic
    from sim.hardware import load_profile
    prof = load_profile(gpu)
    cases = {n: (_catalog_entry(n), M_FULL, M_FULL, M_FULL, None) for n in CALIBRATION + HELD_OUT
             if _catalog_entry(n)[1] == "gemm" and not _catalog_entry(n)[2]}
    cases.update({n: (entry, m, n_, k, int(n[-1])) for n, (entry, m, n_, k) in RESIDENCY.items()})
    seen: dict[str, list[float]] = {}
    for run in ("run48", "run52"):
        meta = json.loads((logs / run / "labels.json").read_text())
        for name, launch_ in zip(meta["labels"], read_raw(logs / run / "ncu.csv"), strict=True):
            if name in cases:
                seen.setdefault(name, []).append(launch_["dram__bytes_read.sum"] / 1e9)
    rows = []
    for name, ((s, _, _), m, n, k, ctas) in cases.items():
        t = timeline.run(s, m, n, k, prof, ctas_per_sm=ctas)
        tm, tn = grid(s, m, n)
        per_wave = memory_traffic(s, m, n, k, prof.sm_count * t["ctas_per_sm"])["hbm_read_bytes"] / 1e9
        v = seen[name]
        rows.append({"kernel": name, "ctas_per_sm": t["ctas_per_sm"], "stages": s.stages, "launches": len(v),
                     "measured_min_gb": round(min(v), 3), "measured_median_gb": round(st.median(v), 3),
                     "measured_max_gb": round(max(v), 3), "per_wave_gb": round(per_wave, 3),
                     "timeline_gb": round(t["hbm_read_bytes"] / 1e9, 3)})
    return rows


def check(dirs, gpu: str = "h200-sxm") -> list[dict]:
    """Each profiled launch's counted clock beside the clock the profile's form gives its own
    measured activity."""
    from sim import clock
    from sim.hardware import load_profile
    prof = load_profile(gpu)
    rows = []
    for d in dirs:
        meta = json.loads((Path(d) / "labels.json").read_text())
        for name, launch_ in zip(meta["labels"], read_raw(Path(d) / "ncu.csv"), strict=True):
            a = activities(launch_)
            top = prof.wgmma_clock_top_ghz if a["u"] > 0.01 else TOP_GHZ  # WGMMA kernels count at most ~1.80
            f = clock.earned_clock(a["u"], a["L"], a["H"], a["f"], prof.clock_form_coef, prof.clock_form_g, top)
            rows.append({"launch": name, **{k: round(v, 4) for k, v in a.items()}, "form_ghz": round(f, 4),
                         "dram_read_gb": round(launch_["dram__bytes_read.sum"] / 1e9, 3),
                         "ms": round(launch_["gpu__time_duration.sum"] / 1e6, 4)})
    return rows


def _print_fits(acts: dict, out_csv: Path | None, dirs=()) -> None:
    fits = clock_fits(acts)
    print(f"{len(acts)} kernels; the form fitted on {len(fits[0]['calibration'])} capped calibration kernels")
    for fit in fits:
        print(f"g={fit['g']} L2 {'on the voltage' if fit['l2_on_voltage'] else 'flat':14s} calibration rms "
              f"{100 * fit['calibration_rms']:4.1f}% | held out |err| median {100 * fit['held_out_median']:4.1f}% "
              f"max {100 * fit['held_out_max']:4.1f}%")
    best = best_fit(fits)
    print(f"best on the calibration set: g={best['g']}, L2 {'on the voltage' if best['l2_on_voltage'] else 'flat'}; "
          "each kernel's counted clock, measured -> from the form:")
    for k, a in acts.items():
        tag = "held out" if k in HELD_OUT else "calib" if k in best["calibration"] else "top" if k in TOP_CLOCK else "-"
        print(f"  {k:30s} {tag:8s} u {a['u']:.2f} L2 {a['L']:5.2f} DRAM {a['H']:4.2f} TB/s  {a['f']:.3f} -> "
              f"{best['clock'][k]:.3f} ({100 * best['err'][k]:+.1f}%)")
    if out_csv:
        rows = [{"kernel": k, "set": "held_out" if k in HELD_OUT else "calibration" if k in best["calibration"]
                 else "top_clock" if k in TOP_CLOCK else "other", **{q: round(v, 4) for q, v in a.items()},
                 **{f"clock g={f['g']} {'volt' if f['l2_on_voltage'] else 'flat'}": round(f["clock"][k], 4)
                    for f in fits}} for k, a in acts.items()]
        from experiments import cli
        cli.write_csv(out_csv, rows, "counted clock f (GHz), tensor use u, L2 -> SM and DRAM TB/s per kernel under "
                      "Nsight Compute, and the clock each form fitted on the calibration kernels gives; python -m "
                      "experiments.activity --fit " + " ".join(str(d) for d in dirs))
    return best


def best_fit(fits: list[dict]) -> dict:
    """The form chosen on the calibration set alone (its rms clock error), never on the held-out kernels."""
    return min(fits, key=lambda f: f["calibration_rms"])


def write_profiles(best: dict, dirs) -> None:
    from sim.hardware import write_profile_parameters
    if best["l2_on_voltage"]:
        raise SystemExit("the chosen form has the L2 term on the SM's voltage, which sim/clock.py's profile form "
                         "does not carry: not written")
    runs = ", ".join(str(d) for d in dirs)
    source = (f"[measured] python -m experiments.activity --fit {runs} --write (Nsight Compute 2025.3.1, clock left "
              f"alone, NVIDIA H200, driver 580.159.04): c_t SMs u (f/1.8)^g + c_l L2->SM TB/s + c_d DRAM TB/s = 1 "
              f"fitted on {len(best['calibration'])} capped calibration kernels (WGMMA-only loops; V4, V5, 128x192, "
              f"64x256 and row-raster GEMMs), g and the L2 term chosen by the calibration rms "
              f"({100 * best['calibration_rms']:.1f}%); the seed's kernels held out: median "
              f"{100 * best['held_out_median']:.1f}%, max {100 * best['held_out_max']:.1f}%")
    params = {"clock_form_coef": [round(float(c), 6) for c in best["coef"]], "clock_form_g": best["g"]}
    for name in ("h200-sxm", "h100-sxm"):
        prov = source if name == "h200-sxm" else (
            "[assumed transfer] the H200's form (same GH100 die, same 700 W SXM limit; HBM3 there, HBM3e here). " + source)
        print("wrote", write_profile_parameters(name, params, {k: prov for k in params}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--labels", type=Path, help="launch the kernels (on the GPU, under ncu); their names in "
                                                "launch order go to this JSON file")
    ap.add_argument("--repeat", type=int, default=2, help="profiled launches per kernel (default %(default)s)")
    ap.add_argument("--summarize", type=Path, metavar="DIR", help="read DIR/ncu.csv and DIR/labels.json (no GPU)")
    ap.add_argument("--csv", type=Path, help="with --summarize: write every ranked counter here")
    ap.add_argument("--top", type=int, default=25, help="counters to print per list (default %(default)s)")
    ap.add_argument("--kernels", default="run47", help="with --labels: 'run47' (KERNELS), 'run48' (CALIBRATION, "
                    "HELD_OUT, TOP_CLOCK) or comma-separated names from experiments.clock_transient's catalog")
    ap.add_argument("--fit", type=Path, nargs="+", metavar="DIR", help="fit the clock form on the calibration "
                    "kernels of these runs and test it on the held-out ones (no GPU)")
    ap.add_argument("--sequence", action="store_true", help="with --labels: SEQUENCE_KERNELS, each after a rest, "
                    f"{SEQUENCE} launches back to back, those at {PROFILED_AT} profiled")
    ap.add_argument("--l2-resident", action="store_true", help="with --labels: the L2_RESIDENT load-only loops")
    ap.add_argument("--residency", action="store_true", help="with --labels: the RESIDENCY rings (run 52)")
    ap.add_argument("--profile-at", default=",".join(map(str, PROFILED_AT)),
                    help="with --sequence: the launch numbers to profile (default %(default)s)")
    ap.add_argument("--check", type=Path, nargs="+", metavar="DIR", help="each profiled launch's clock against the "
                    "profile's form given that launch's own activity (no GPU)")
    ap.add_argument("--port", action="store_true", help="fit the L2 -> SM port on the load-only loops of runs 48 "
                    "and 51 with their measured misses, and hold out run 48's GEMMs (no GPU)")
    ap.add_argument("--dram", action="store_true", help="each GEMM's DRAM bytes under the profiler (runs 48, "
                    "52) against the per-wave estimate and the GPU-wide timeline (no GPU); with --csv, write them")
    ap.add_argument("--write", action="store_true", help="with --fit: write the form chosen on the calibration "
                    "set into sim/profiles/h200-sxm.json (and h100-sxm.json, an assumed transfer)")
    args = ap.parse_args(argv)
    if args.dram:
        rows = dram_against_models()
        within = lambda r, key: r["measured_min_gb"] * 0.97 <= r[key] <= r["measured_max_gb"] * 1.03  # noqa: E731
        for r in rows:
            print(f"{r['kernel']:24s} {r['ctas_per_sm']} CTA/SM  measured {r['measured_min_gb']:5.2f}-"
                  f"{r['measured_max_gb']:5.2f} GB  per-wave {r['per_wave_gb']:5.2f}{' ok' if within(r, 'per_wave_gb') else '   '}"
                  f"  timeline {r['timeline_gb']:5.2f}{' ok' if within(r, 'timeline_gb') else ''}")
        for key in ("per_wave_gb", "timeline_gb"):
            print(f"{key}: within the measured range (+-3%) for {sum(within(r, key) for r in rows)} of {len(rows)}")
        if args.csv:
            from experiments import cli
            cli.write_csv(args.csv, rows, "DRAM read bytes per 8192^3 launch under Nsight Compute (runs 48 and 52; "
                          "run 52's rings padded down to fewer CTAs per SM) against the model's per-wave estimate and "
                          "the GPU-wide timeline (sim/timeline.py); python -m experiments.activity --dram")
        return
    if args.port:
        res = port_fits()
        print(f"port fitted on the load-only loops: {res['fitted']} (the profile: {res['profile']})")
        print("model / measured - 1 at each kernel's counted clock with its measured DRAM bytes: profile's port -> fitted")
        for n, r in res["rows"].items():
            print(f"  {r['set']:18s} {n:28s} {100 * r['profile']:+6.1f}% -> {100 * r['fitted']:+6.1f}%")
        for label in ("GEMMs (held out)",):
            for key in ("profile", "fitted"):
                e = [abs(r[key]) for r in res["rows"].values() if r["set"] == label]
                print(f"{label}, {key} port: median |err| {100 * st.median(e):.1f}%, max {100 * max(e):.1f}%")
        print("the seed's kernels, clock and time both the model's (earned clock, fitted port), given their DRAM bytes:")
        for n, r in res["chain"].items():
            print(f"  {n:10s} {r['clock']:.3f} GHz (counted {r['measured_clock']:.3f})  {r['tflops']:6.1f} TFLOPS "
                  f"(measured {r['measured_tflops']:6.1f}, {100 * (r['tflops'] / r['measured_tflops'] - 1):+.1f}%)")
        return
    if args.check:
        rows = check(args.check)
        for r in rows:
            print(f"{r['launch']:16s} {r['ms']:6.3f} ms  u {r['u']:.2f}  L2 {r['L']:5.2f}  DRAM {r['H']:4.2f} TB/s "
                  f"({r['dram_read_gb']:.2f} GB read)  clock {r['f']:.3f}  form {r['form_ghz']:.3f} "
                  f"({100 * (r['form_ghz'] / r['f'] - 1):+.1f}%)")
        if args.csv:
            from experiments import cli
            cli.write_csv(args.csv, rows, "each profiled launch's counted clock f and activity (Nsight Compute) and the "
                          "clock the profile's form gives that activity; python -m experiments.activity --check "
                          + " ".join(str(d) for d in args.check))
        return
    if args.fit:
        best = _print_fits(kernel_activities(args.fit), args.csv, args.fit)
        if args.write:
            write_profiles(best, args.fit)
        return
    if args.summarize:
        res = summarize(args.summarize, args.csv, args.top)
        _print(res)
        return
    if not args.labels:
        ap.error("give --labels (launch the kernels under ncu) or --summarize DIR")
    named = {"run47": KERNELS, "run48": CALIBRATION + HELD_OUT + TOP_CLOCK}
    kernels = named.get(args.kernels) or tuple(k.strip() for k in args.kernels.split(","))
    if args.l2_resident or args.residency:
        launch(args.labels, args.repeat, shapes=L2_RESIDENT if args.l2_resident else RESIDENCY)
        return
    if args.sequence:
        launch(args.labels, 1, kernels=SEQUENCE_KERNELS, sequence=SEQUENCE,
               profiled_at=tuple(int(i) for i in args.profile_at.split(",")))
        return
    launch(args.labels, args.repeat, kernels=kernels)


if __name__ == "__main__":
    main()
