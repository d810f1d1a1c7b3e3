"""What each kernel does per SM clock, as Nsight Compute counts it, beside the clock it starts at
(runs 47-62; docs/research/notes.md 57-79). Run under Nsight Compute (`bash experiments/research/device.sh
activity runNN`):

  ncu --nvtx --nvtx-include "measured/" --set full --page raw --clock-control none \\
      --cache-control none --csv python3 -m experiments.research.activity --labels L
  python -m experiments.research.activity --summarize DIR [--csv FILE]          (no GPU)

Why: from a rested GPU the kernels start at clocks that neither their tensor work nor their
L2 bytes per clock order (runs 44-46, docs/research/notes.md 53-55): V3 s2 at 1.39-1.42 GHz and
V3 s3 at 1.25 do the same work per clock; the WGMMA-only loop, as busy on the tensor cores,
starts at 1.64. Something else the schedule does sets it. This profiles each kernel of those
runs with every counter of Nsight Compute's full set (each launch replayed pass by pass, the
clock left alone) and ranks the counters, as rates per SM cycle, by how well they order the
early clocks, and by how far apart they put V3 s2 and V3 s3.

`--labels`: launches each kernel of a set (warmed up outside the profiled range) `--repeat`
times inside an NVTX range "measured", and writes the names in launch order to the JSON file:
KERNELS (run 47), CALIBRATION + HELD_OUT + TOP_CLOCK (run 48), a back-to-back SEQUENCE (runs
49-50), L2_RESIDENT (run 51), RESIDENCY (run 52), STRIDES (run 53), GROUPED (run 54), L2_RESIDENT_STRIDES
(run 56), CONVOY (run 58), SHAPES (run 61), LEAK (run 62). Every label is `shape_of`'s: a catalog
name (experiments.catalog) and the product's shape.
`--summarize DIR`: reads DIR/ncu.csv (the raw page: one row per launch, one column per
counter) and DIR/labels.json; the early clocks come from clock_transient.csv (EARLY_RUNS).
`--check DIR..`: each launch's counted clock beside the clock the profile's form gives it.
What reads these runs besides: fit_clock_form (the form, run 48), fit_port (the L2 -> SM port,
runs 48 and 51), dram_reuse (runs 48, 52-62), publish (activity.csv: every launch's activity).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import statistics as st
import time
from pathlib import Path

import numpy as np

from experiments import catalog
from experiments.paths import logs_dir, read_rows, results_dir, write_csv
from experiments.probe import probed_launcher
from experiments.reference import random_operands
from sim import clock
from sim.hardware import load_profile

LOGS = logs_dir()
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


def early_clocks() -> dict[str, float]:
    """{kernel: median counted GHz over its first five launches after a rest, all passes and runs}
    (experiments/results/h200-sxm/clock_transient.csv)."""
    seen: dict[str, list[float]] = {}
    for r in read_rows(results_dir() / "clock_transient.csv"):
        if r["run"] in EARLY_RUNS and r.get("clock first 5"):
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
                    + f"); python -m experiments.research.activity --summarize {logs}; {json.dumps(meta['info'])}\n")
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


def top_clock(a: dict, prof) -> float:
    """The clock an activity runs at when nothing holds it: WGMMA kernels count at most ~1.80."""
    return prof.wgmma_clock_top_ghz if a["u"] > 0.01 else TOP_GHZ


def activities(launch: dict) -> dict:
    """One launch: counted clock f (GHz), tensor use per clock u, L2 -> SM read and DRAM TB/s."""
    t = launch["gpu__time_duration.sum"] * 1e-9
    return {"f": launch["smsp__cycles_elapsed.avg.per_second"] / 1e9, "u": launch[TENSOR] / 100,
            "L": launch["lts__t_sectors_srcunit_tex_op_read.sum"] * 32 / t / 1e12,
            "H": (launch["dram__bytes_read.sum"] + launch["dram__bytes_write.sum"]) / t / 1e12}


def labelled_launches(run_dir: Path):
    """(label, {counter: value}) for each profiled launch of a run written by --labels under ncu."""
    meta = json.loads((Path(run_dir) / "labels.json").read_text())
    return zip(meta["labels"], read_raw(Path(run_dir) / "ncu.csv"), strict=True)


def kernel_activities(dirs) -> dict[str, dict]:
    """{kernel: median activities over its launches} from runs written by --labels under ncu."""
    seen: dict[str, list[dict]] = {}
    for d in dirs:
        for name, launch in labelled_launches(d):
            seen.setdefault(name, []).append(activities(launch))
    return {k: {q: st.median(a[q] for a in v) for q in v[0]} for k, v in seen.items()}


# Run 51: the load-only loop where its panels fit in L2 (one wave at each residency; A and B
# 15-24 MB against the ~35 MB an LRU keeps), so that nearly every byte hits: the L2 -> SM port's
# hit rate, which the DRAM-heavy loops of run 48 leave traded against a miss's cost.
L2_RESIDENT = {  # label: (catalog name, M, N, K); CTAs = one wave at the loop's CTAs per SM
    "load loop s1 L2-resident": ("load loop 128x128x64 s1", 3072, 4224, 1024),  # 24 x 33 = 792 = 132 x 6
    "load loop s2 L2-resident": ("load loop 128x128x64 s2", 2304, 2816, 2048),  # 18 x 22 = 396 = 132 x 3
    "load loop s3 L2-resident": ("load loop 128x128x64 s3", 1536, 2816, 2048),  # 12 x 22 = 264 = 132 x 2
    "load loop s4 L2-resident": ("load loop 128x128x64 s4", 1536, 1408, 4096),  # 12 x 11 = 132
}


def _at_8192(names) -> dict:
    """{name: (name, 8192, 8192, 8192)}: catalog names launched at the seed's shape."""
    return {name: (name, M_FULL, M_FULL, M_FULL) for name in names}


# Run 52: which rings lose their L2 reuse, the same kernels at fewer CTAs per SM (unused shared
# memory per CTA, as run 45) and deeper: label "v2 s2 @3" = V2, 2 stages, 3 CTAs per SM, i.e.
# 6 stages of loads per SM (catalog.ALIASES: which padding gives which residency).
RESIDENCY = _at_8192(("v2 s2 @3", "v2 s2 @2", "v2 s2 @1", "v2 s3 @2", "v2 s3 @1", "v2 s4 @1", "v2 s6 @1",
                      "v3 s2 @2", "v3 s2 @1", "v3 s3 @2", "v3 s3 @1", "v3 s6 @1"))
# Run 53: do the rings lose their reuse to L2 set conflicts? The same kernels with A's and B's
# rows 64 elements (128 B) longer than K, so that the panels' 16 KB row stride is off the powers
# of two the L2's sets may alias on; label "... ld+64".
LD_PAD = 64
STRIDES = {**{name: (name, M_FULL, M_FULL, M_FULL) for name in ("v1", "v2", "v2 s3", "v3 s2", "v3 s3",
                                                                 "load loop 128x128x64 s2", "load loop 128x128x64 s3")},
           **{f"{name} ld+{LD_PAD}": (name, M_FULL, M_FULL, M_FULL, LD_PAD)
              for name in ("v1", "v2", "v2 s3", "v3 s2", "v3 s3", "load loop 128x128x64 s2", "load loop 128x128x64 s3")}}
# Run 54: the rings with a grouped raster (8 tile rows per group): a wave's panels in a smaller
# working set. Plain counterparts: runs 48 and 53.
GROUPED = _at_8192(f"{name} grouped" for name in ("v1", "v2", "v2-local", "v2 s3", "v3 s2", "v3 s3"))
# Run 58: a held-out test of sim/convoy.py (NOTES 72): GEMMs no run has profiled, each predicted
# held in convoy (keeps its per-wave bytes) or free-running (loses reuse) before the run.
CONVOY = _at_8192(("v1 bk32", "v2 bk32 s2", "v3 bk32 s2", "v3 bk32 s3", "v4 s3", "v4 s4", "v5 s2", "v3 128x192 s2"))
# Run 61: a held-out test of sim/convoy.py's bytes off the 8192^3 shape it was drawn from (NOTES
# 78): K doubled (twice the K steps to drift over) and a 96 x 96 tile grid (23-35 waves, sharers
# 96 launches apart), the held and the free-running rings, predicted before the run.
SHAPES = {f"{name} {m}x{n}x{k}": (name, m, n, k) for name in ("v1", "v2", "v3 s2", "v3 s3")
          for m, n, k in ((8192, 8192, 16384), (12288, 12288, 8192))}
# Run 62: where the held kernels' convoy starts to leak (NOTES 79): V1 and V3 s2 at 128 x 128 with
# block_k 64 and 32, K from 4096 to 24576 (64 to 384 K steps per CTA), M = N = 8192.
LEAK = {f"{name} k={k}": (name, M_FULL, M_FULL, k) for name, ks in (
    ("v1", (12288, 24576)), ("v3 s2", (12288, 24576)), ("v1 bk32", (4096, 6144, 12288)),
    ("v3 bk32 s2", (4096, 6144, 12288))) for k in ks}
# Run 56: the L2-resident loops again, and on rows 128 B longer: does TMA's feed from L2 (all
# hits) depend on the 16 KB stride (rows of a box landing on few L2 slices)?
L2_RESIDENT_STRIDES = {**L2_RESIDENT, **{f"{label} ld+{LD_PAD}": (*shape, LD_PAD)
                                         for label, shape in L2_RESIDENT.items()}}
SEQUENCE = 250           # run 49: launches back to back per kernel, after a rest ...
PROFILED_AT = (0, 30, 120, 240)  # ... of which these are profiled: rested, the seed's window, falling, settled
SEQUENCE_KERNELS = ("v1", "v2", "v2-local", "v3 s2", "v3 s3")
REST_S = 3.0


def launch(labels_path: Path, repeat: int, warmups: int = 5, kernels=KERNELS, sequence: int = 0,
           profiled_at=PROFILED_AT, shapes=None) -> None:
    """Each kernel `repeat` times inside an NVTX range "measured" after `warmups`; or, with
    `sequence`, after a rest, `sequence` launches back to back of which those at `profiled_at`
    are in the range (labels "name #i"). `shapes`: {label: (catalog name, M, N, K[, row pad])}
    instead of `kernels` at 8192^3 (the operands are corners of one pair as large as the largest
    shape)."""
    import torch
    from torch.cuda import nvtx
    M = N = K = M_FULL
    shapes = shapes or _at_8192(kernels)
    big = [max([d] + [shape[i] for shape in shapes.values()]) for i, d in ((1, M), (2, N), (3, K))]
    a, b = random_operands(*big, "float16", seed=1)
    b = b.t().contiguous().t()
    labels = []
    padded = {}  # leading-dimension pad (elements) -> (A, B) whose rows are that much longer than K
    for name, (entry_name, m, n, k, *ld) in shapes.items():
        entry = catalog.entry(entry_name)
        launcher = probed_launcher(entry.kernel_config(clock_probe=True), m, n, k, 1, entry.pad_bytes)[0]
        if ld and ld[0]:
            if ld[0] not in padded:  # the same values, rows ld[0] elements longer: strides off the powers of two
                a_pad = torch.zeros((M, K + ld[0]), dtype=a.dtype, device=a.device)
                a_pad[:, :K] = a
                b_pad = torch.zeros((N, K + ld[0]), dtype=b.dtype, device=b.device)
                b_pad[:, :K] = b.t()
                padded[ld[0]] = (a_pad[:, :K], b_pad[:, :K].t())
            a_mk, b_kn = padded[ld[0]][0][:m, :k], padded[ld[0]][1][:k, :n]
        else:
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


def launches_by_label(run_dir: Path, shapes: dict) -> dict:
    """{label: ((catalog name, M, N, K), DRAM read bytes, counted GHz, ms)}: medians over the
    label's profiled launches, for the labels in `shapes`."""
    seen: dict[str, list] = {}
    for name, launch_ in labelled_launches(run_dir):
        seen.setdefault(name, []).append((launch_["dram__bytes_read.sum"],
                                          launch_["smsp__cycles_elapsed.avg.per_second"] / 1e9,
                                          launch_["gpu__time_duration.sum"] / 1e6))
    return {n: (shapes[n], *(st.median(x[i] for x in v) for i in range(3))) for n, v in seen.items() if n in shapes}


def shape_of(label: str) -> tuple:
    """(catalog name, M, N, K, rows' extra elements) of any launch label of these runs: a
    label of one of the sets above, or a catalog name at 8192^3; "name #i" is launch i of a
    sequence (runs 49-50)."""
    name = re.sub(r" #\d+$", "", label)
    shapes = {**L2_RESIDENT, **RESIDENCY, **STRIDES, **GROUPED, **L2_RESIDENT_STRIDES, **CONVOY, **SHAPES, **LEAK}
    entry, m, n, k, *ld = shapes.get(name, (name, M_FULL, M_FULL, M_FULL))
    return entry, m, n, k, (ld[0] if ld else 0)


def check(dirs, gpu: str = "h200-sxm") -> list[dict]:
    """Each profiled launch's counted clock beside the clock the profile's form gives its own
    measured activity."""
    prof = load_profile(gpu)
    rows = []
    for d in dirs:
        for name, launch_ in labelled_launches(d):
            a = activities(launch_)
            f = clock.earned_clock(a["u"], a["L"], a["H"], a["f"], prof.clock_form_coef, prof.clock_form_g,
                                   top_clock(a, prof))
            rows.append({"launch": name, **{k: round(v, 4) for k, v in a.items()}, "form_ghz": round(f, 4),
                         "dram_read_gb": round(launch_["dram__bytes_read.sum"] / 1e9, 3),
                         "ms": round(launch_["gpu__time_duration.sum"] / 1e6, 4)})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--labels", type=Path, help="launch the kernels (on the GPU, under ncu); their names in "
                                                "launch order go to this JSON file")
    ap.add_argument("--repeat", type=int, default=2, help="profiled launches per kernel (default %(default)s)")
    ap.add_argument("--kernels", default="run47", help="with --labels: 'run47' (KERNELS), 'run48' (CALIBRATION, "
                    "HELD_OUT, TOP_CLOCK) or comma-separated names from experiments.catalog")
    ap.add_argument("--sequence", action="store_true", help="with --labels: SEQUENCE_KERNELS, each after a rest, "
                    f"{SEQUENCE} launches back to back, those at --profile-at profiled")
    ap.add_argument("--profile-at", default=",".join(map(str, PROFILED_AT)),
                    help="with --sequence: the launch numbers to profile (default %(default)s)")
    ap.add_argument("--l2-resident", action="store_true", help="with --labels: the L2_RESIDENT load-only loops")
    ap.add_argument("--residency", action="store_true", help="with --labels: the RESIDENCY rings (run 52)")
    ap.add_argument("--strides", action="store_true", help="with --labels: STRIDES, plain and with padded rows (run 53)")
    ap.add_argument("--grouped", action="store_true", help="with --labels: GROUPED, the rings in a grouped raster (run 54)")
    ap.add_argument("--convoy", action="store_true", help="with --labels: CONVOY, sim/convoy.py's held-out test (run 58)")
    ap.add_argument("--shapes", action="store_true", help="with --labels: SHAPES, sim/convoy.py's bytes off 8192^3 (run 61)")
    ap.add_argument("--leak", action="store_true", help="with --labels: LEAK, the held kernels over 64-384 K steps (run 62)")
    ap.add_argument("--l2-resident-strides", action="store_true",
                    help="with --labels: L2_RESIDENT_STRIDES, the L2-resident loops plain and on padded rows (run 56)")
    ap.add_argument("--summarize", type=Path, metavar="DIR", help="rank every counter of DIR/ncu.csv against the "
                    "early clocks (run 47; no GPU)")
    ap.add_argument("--top", type=int, default=25, help="with --summarize: counters to print per list")
    ap.add_argument("--check", type=Path, nargs="+", metavar="DIR", help="each profiled launch's clock against the "
                    "profile's form given that launch's own activity (no GPU)")
    ap.add_argument("--csv", type=Path, help="with --summarize or --check: write the rows here")
    args = ap.parse_args(argv)
    if args.check:
        rows = check(args.check)
        for r in rows:
            print(f"{r['launch']:16s} {r['ms']:6.3f} ms  u {r['u']:.2f}  L2 {r['L']:5.2f}  DRAM {r['H']:4.2f} TB/s "
                  f"({r['dram_read_gb']:.2f} GB read)  clock {r['f']:.3f}  form {r['form_ghz']:.3f} "
                  f"({100 * (r['form_ghz'] / r['f'] - 1):+.1f}%)")
        if args.csv:
            write_csv(args.csv, rows, "each profiled launch's counted clock f and activity (Nsight Compute) and the "
                          "clock the profile's form gives that activity; python -m experiments.research.activity --check "
                          + " ".join(str(d) for d in args.check))
        return
    if args.summarize:
        _print(summarize(args.summarize, args.csv, args.top))
        return
    if not args.labels:
        ap.error("give --labels (launch the kernels under ncu), --summarize DIR or --check DIR..")
    sets = {"l2_resident": L2_RESIDENT, "residency": RESIDENCY, "strides": STRIDES, "grouped": GROUPED,
            "l2_resident_strides": L2_RESIDENT_STRIDES, "convoy": CONVOY, "shapes": SHAPES, "leak": LEAK}
    chosen = [shapes for flag, shapes in sets.items() if getattr(args, flag)]
    if chosen:
        launch(args.labels, args.repeat, shapes=chosen[0])
    elif args.sequence:
        launch(args.labels, 1, kernels=SEQUENCE_KERNELS, sequence=SEQUENCE,
               profiled_at=tuple(int(i) for i in args.profile_at.split(",")))
    else:
        named = {"run47": KERNELS, "run48": CALIBRATION + HELD_OUT + TOP_CLOCK}
        launch(args.labels, args.repeat, kernels=named.get(args.kernels)
               or tuple(k.strip() for k in args.kernels.split(",")))


if __name__ == "__main__":
    main()
