"""Why a ring's CTAs drift apart and lose their L2 reuse: four tests on stamped launches.
python -m experiments.research.drift [--threshold]
python -m experiments.research.drift --free-cv    (the profile's free-running spread: fast SMs and per-CTA CV, sim/convoy.py)

Runs 22, 29, 57 and 59 recorded every CTA's start, end and SM in the very launch whose DRAM bytes
Nsight Compute counted (`bash experiments/research/device.sh same-launch`), and replaying those
stamps through the LRU L2 (sim.l2cache.replay) gives the bytes within a few percent
(l2_replay.py). What the model lacks is the stamps: sim/timeline.py keeps V2's sharers
together (1.4 us apart where the H200 has 3-18). Each test takes one thing from the stamps:

  scheduled  the measured durations, but the start times the block scheduler would give
             them (sim.l2cache.scheduled_timeline: each CTA takes the slot that frees first).
             If this reproduces the gaps and the bytes, where a CTA is placed is not the
             missing piece; how long it runs is.
  shuffled   the same durations dealt to the CTAs at random (seed 0), then scheduled. If a
             kernel that keeps its reuse loses it here, what keeps it is the correlation of
             duration with position (a restoring force), not a small spread.
  sides      per full wave, the median duration of the CTAs on each L2 partition's SMs
             (the profile's l2_side_by_sm) and their replayed miss share: a split by side is
             a source of drift no per-CTA noise has.
  threshold  (--threshold) i.i.d. noise of CV sigma on one duration, scheduled and replayed:
             the smallest sigma of SIGMAS at which the bytes leave the per-wave estimate by
             10%. Against it: the kernel's first-wave CV (before any reuse is lost) and the
             WGMMA-only loops' within-SM CV (run 23), the noise of the tensor cores alone.

Writes experiments/results/h200-sxm/drift.csv (and drift_threshold.csv). No GPU needed.
"""
from __future__ import annotations

import argparse
import functools

import numpy as np

from tqdm import tqdm

from experiments import catalog
from experiments.paths import logs_dir, results_dir, write_csv
from experiments.research.hbm_compare import read_ncu
from experiments.research.l2_same_launch import KERNELS as SAME_LAUNCH
from experiments.research.stamps import resident_per_sm, start_gap
from sim.engines import grid, memory_traffic
from sim.hardware import load_profile
from sim.l2cache import probe_timeline, replay, scheduled_timeline

RESULTS = results_dir()
LOGS = logs_dir()
GPU = "h200-sxm"
RUNS = ("run29", "run22", "run57", "run59")  # run 57: DRIFT (column and grouped raster), run 59: CONVOY; three launches each
SHARER_DISTANCE = 64           # launches between an A panel's sharers in the column raster (64 tile rows)
SIGMAS = (0.01, 0.02, 0.03, 0.05, 0.08)
LOST = 1.10                    # bytes over the per-wave estimate that count as reuse lost


def sharer_gap_us(starts_us) -> float:
    """Median time between the starts of CTAs SHARER_DISTANCE launches apart."""
    return start_gap(starts_us, SHARER_DISTANCE)


@functools.lru_cache(maxsize=None)
def _run(run: str) -> tuple[dict, dict]:
    """A run's stamps {label: words} and Nsight Compute rows {label: counters}, read once."""
    probes = np.load(LOGS / run / "probes.npz")
    names = [str(x) for x in probes["labels"]] if "labels" in probes.files else [nm for nm, _, _ in SAME_LAUNCH]
    return {nm: probes[nm] for nm in names}, dict(zip(names, read_ncu(LOGS / run / "ncu.csv"), strict=True))


def labels(run: str) -> list[str]:
    """The stamped launches of a run, in the order of its ncu.csv rows."""
    return list(_run(run)[0])


def schedule_of(name: str):
    """(schedule, K) of a stamped launch's label: l2_same_launch.KERNELS, or a catalog name
    'kernel#i' (runs 57 and 59)."""
    kernels = {nm: (catalog.schedule(key), k) for nm, key, k in SAME_LAUNCH}
    return kernels[name] if name in kernels else (catalog.schedule(name.split("#")[0]), 8192)


def launch(run: str, name: str) -> dict:
    """One stamped launch: schedule, K, per-CTA starts / durations (us) and SMs, CTAs per SM,
    Nsight Compute's DRAM read bytes of the same launch."""
    probes, ncu = _run(run)
    s, k = schedule_of(name)
    rec = probes[name].astype(np.int64)
    starts, durations = probe_timeline(rec)
    prof = load_profile(GPU)
    return {"run": run, "kernel": name, "schedule": s, "k": k, "starts": starts,
            "durations": durations, "sm": rec[:, 4], "ctas_per_sm": resident_per_sm(starts, durations, prof.sm_count),
            "ncu_gb": ncu[name]["dram__bytes_read.sum"] / 1e9}


def replayed_gb(ln: dict, starts, durations, by_cta: bool = False):
    prof = load_profile(GPU)
    r = replay(ln["schedule"], 8192, 8192, ln["k"], starts, durations, prof.l2_lru_bytes)
    gb = r["hbm_read_bytes"] / 1e9
    return (gb, r["hbm_read_bytes_by_cta"]) if by_cta else gb


def rescheduled(ln: dict, durations) -> np.ndarray:
    prof = load_profile(GPU)
    starts, _, _ = scheduled_timeline(durations, ln["ctas_per_sm"], prof.sm_count, prof.sm_dispatch_order)
    return starts


def side_split(ln: dict, miss_share=None) -> list[dict]:
    """Per full wave: median duration (us) of the CTAs on each L2 side's SMs, and their mean
    replayed miss share when given."""
    prof = load_profile(GPU)
    side = np.asarray(prof.l2_side_by_sm)[ln["sm"]]
    per_wave = prof.sm_count * ln["ctas_per_sm"]
    out = []
    for w in range(len(ln["durations"]) // per_wave):
        blk = slice(w * per_wave, (w + 1) * per_wave)
        d, sd = ln["durations"][blk], side[blk]
        wave = {"duration_us": [float(np.median(d[sd == h])) for h in (0, 1)]}
        if miss_share is not None:
            wave["miss_share"] = [float(miss_share[blk][sd == h].mean()) for h in (0, 1)]
        out.append(wave)
    return out


def max_side_split(ln: dict) -> float:
    """The largest split by L2 side over the launch's full waves: |side 1 / side 0 - 1| of the
    median CTA durations."""
    return max(abs(w["duration_us"][1] / w["duration_us"][0] - 1) for w in side_split(ln))


def launch_row(ln: dict) -> dict:
    """The scheduled, shuffled and sides tests on one launch."""
    prof = load_profile(GPU)
    s, du = ln["schedule"], ln["durations"]
    per_wave = prof.sm_count * ln["ctas_per_sm"]
    measured_gb, missed = replayed_gb(ln, ln["starts"], du, by_cta=True)
    sched = rescheduled(ln, du)
    shuffled = np.random.default_rng(0).permutation(du)
    shuffled_starts = rescheduled(ln, shuffled)
    share = missed / ((s.block_m + s.block_n) * ln["k"] * 2)
    waves = side_split(ln, share)
    split = [wv["duration_us"][1] / wv["duration_us"][0] - 1 for wv in waves]
    # the slower side's miss share over the faster side's, from wave 3 on (settled)
    excess = [(wv["miss_share"][1] - wv["miss_share"][0]) * np.sign(sp) for wv, sp in zip(waves, split)][3:]
    wave0 = du[:per_wave]
    return {"run": ln["run"], "kernel": ln["kernel"], "ctas_per_sm": ln["ctas_per_sm"],
            "ncu_gb": round(ln["ncu_gb"], 3),
            "per_wave_gb": round(memory_traffic(s, 8192, 8192, ln["k"], per_wave)["hbm_read_bytes"] / 1e9, 3),
            "replay_gb": round(measured_gb, 3),
            "scheduled_gb": round(replayed_gb(ln, sched, du), 3),
            "shuffled_gb": round(replayed_gb(ln, shuffled_starts, shuffled), 3),
            "gap_us": round(sharer_gap_us(ln["starts"]), 1), "scheduled_gap_us": round(sharer_gap_us(sched), 1),
            "shuffled_gap_us": round(sharer_gap_us(shuffled_starts), 1),
            "cv_wave0": round(float(wave0.std() / wave0.mean()), 4), "cv_all": round(float(du.std() / du.mean()), 4),
            "side_split_max_pct": round(100 * float(np.max(np.abs(split))), 1),
            "side_split_by_wave_pct": " ".join(f"{100 * x:+.1f}" for x in split),
            "slower_side_miss_excess": round(float(np.mean(excess)), 3) if excess else ""}


def noise_threshold(s, k: int, ctas: int, duration_us: float) -> dict:
    """Bytes (GB) with i.i.d. per-CTA noise of each CV in SIGMAS on one duration, scheduled
    (one seed), and the smallest CV at which they exceed LOST x the per-wave estimate."""
    prof = load_profile(GPU)
    tm, tn = grid(s, 8192, 8192)
    n_ctas = tm * tn
    per_wave_gb = memory_traffic(s, 8192, 8192, k, prof.sm_count * ctas)["hbm_read_bytes"] / 1e9
    eps = np.random.default_rng(0).standard_normal(n_ctas)
    out = {"per_wave_gb": round(per_wave_gb, 3), "threshold_cv": None}
    for sigma in SIGMAS:
        du = duration_us * (1 + sigma * eps)
        starts, du, _ = scheduled_timeline(du, ctas, prof.sm_count, prof.sm_dispatch_order)
        gb = replay(s, 8192, 8192, k, starts, du, prof.l2_lru_bytes)["hbm_read_bytes"] / 1e9
        out[f"gb_at_{sigma}"] = round(gb, 3)
        out[f"gap_at_{sigma}"] = round(sharer_gap_us(starts), 1)
        if out["threshold_cv"] is None and gb > LOST * per_wave_gb:
            out["threshold_cv"] = sigma
    return out


FREE_RUNNING = ("v2 grouped", "v2-local grouped", "v3 s3 grouped")  # rings run freely, keeping their reuse
FAST_BELOW = 0.9      # an SM whose CTAs take under this x the launch's median is a fast SM
LOCAL_WINDOW = 32     # CTAs in start order that run side by side: their common slowdown moves no sharer


def spread_parts(ln: dict) -> dict:
    """One launch's CTA durations taken apart: the per-SM factor (each SM's median duration over
    the launch's), the fast SMs (factor under FAST_BELOW) and their factor over the other SMs',
    and the CV of what is left once the per-SM factor and the running mean over LOCAL_WINDOW
    CTAs in start order (a slowdown every SM shares) are divided out."""
    sm_count = load_profile(GPU).sm_count
    du, sm = ln["durations"], ln["sm"]
    factor = np.array([np.median(du[sm == x]) for x in range(sm_count)]) / np.median(du)
    fast = factor < FAST_BELOW
    rest = du / (np.median(du) * factor[sm])
    order = np.argsort(ln["starts"], kind="stable")
    w = LOCAL_WINDOW
    padded = np.pad(rest[order], (w // 2, w - 1 - w // 2), mode="edge")
    local = np.convolve(padded, np.ones(w) / w, mode="valid")
    return {"sm_factor": factor, "fast_sms": int(fast.sum()),
            "fast_sm_factor": float(np.median(factor[fast]) / np.median(factor[~fast])) if fast.any() else 1.0,
            "sm_factor_cv": float(factor.std()), "cta_cv": float((rest[order] / local).std())}


def free_running_spread() -> dict:
    """sim.hardware's free_running_fast_sms, free_running_fast_sm_factor and free_running_cta_cv:
    run 57's rings in a grouped raster (FREE_RUNNING), which keep their L2 reuse, so their spread
    is not an effect of lost reuse; the median over their launches of spread_parts, beside every
    run-57 launch's own."""
    parts = {nm: spread_parts(launch("run57", nm)) for nm in labels("run57")}
    free = [p for nm, p in parts.items() if nm.split("#")[0] in FREE_RUNNING]
    factors = np.array([p["sm_factor"] for p in free])
    return {"free_running_fast_sms": int(np.median([p["fast_sms"] for p in free])),
            "free_running_fast_sm_factor": round(float(np.median([p["fast_sm_factor"] for p in free])), 3),
            "free_running_cta_cv": round(float(np.median([p["cta_cv"] for p in free])), 4),
            "fast_sm_ids": [int(x) for x in np.where(factors.mean(axis=0) < FAST_BELOW)[0]],
            "between_launches": round(float(np.median(np.corrcoef(factors)[np.triu_indices(len(free), 1)])), 3),
            "by_launch": parts}


def mma_loop_within_sm_cv() -> dict:
    """The WGMMA-only loops of run 23 (no loads after the first fill): the median over full
    waves of the within-SM standard deviation of CTA duration over the wave's mean, by loop."""
    probes = np.load(LOGS / "run23" / "mma_probes.npz")
    prof = load_profile(GPU)
    out = {}
    for name in probes.files:
        rec = probes[name].astype(np.int64)
        st, du = probe_timeline(rec)
        per_wave = prof.sm_count * resident_per_sm(st, du, prof.sm_count)
        cvs = []
        for w in range(len(du) // per_wave):
            blk = slice(w * per_wave, (w + 1) * per_wave)
            d, sm = du[blk], rec[blk, 4]
            sds = [d[sm == x].std() for x in np.unique(sm) if np.sum(sm == x) > 1]
            cvs.append(np.mean(sds) / d.mean())
        out[name] = round(float(np.median(cvs)), 4)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threshold", action="store_true", help="also the i.i.d.-noise threshold per kernel (~1 min)")
    ap.add_argument("--kernels", nargs="*", default=None, help="kernel names, without '#i' (default: every K = 8192 one); a subset is printed, not written")
    ap.add_argument("--free-cv", action="store_true", help="only the free-running spread (the profile's "
                    "free_running_* fields) from run 57's grouped rings, and every run-57 launch's parts")
    args = ap.parse_args(argv)
    if args.free_cv:
        r = free_running_spread()
        for nm, p in r["by_launch"].items():
            print(f"{nm:22s} fast SMs {p['fast_sms']:3d} at {p['fast_sm_factor']:.3f} x the others  per-SM CV "
                  f"{100 * p['sm_factor_cv']:4.1f}%  the rest, per CTA {100 * p['cta_cv']:4.1f}%")
        print(f"over {', '.join(FREE_RUNNING)} (median): free_running_fast_sms = {r['free_running_fast_sms']}, "
              f"free_running_fast_sm_factor = {r['free_running_fast_sm_factor']}, free_running_cta_cv = "
              f"{r['free_running_cta_cv']}; fast SM ids {r['fast_sm_ids']}; per-SM factors between launches: "
              f"correlation {r['between_launches']} (median)")
        return
    rows = []
    for run in RUNS:
        for name in tqdm(labels(run), desc=run, unit="launch", leave=False):
            if schedule_of(name)[1] != 8192 or (args.kernels and name.split("#")[0] not in args.kernels):
                continue
            r = launch_row(launch(run, name))
            rows.append(r)
            tqdm.write(f"{run} {name:18s} {r['ctas_per_sm']} CTA/SM  GB ncu {r['ncu_gb']:5.2f} replay {r['replay_gb']:5.2f} "
                       f"scheduled {r['scheduled_gb']:5.2f} shuffled {r['shuffled_gb']:5.2f} (per-wave {r['per_wave_gb']:.2f})  "
                       f"gap us {r['gap_us']:5.1f} / {r['scheduled_gap_us']:5.1f} / {r['shuffled_gap_us']:5.1f}  "
                       f"CV wave0 {r['cv_wave0']:.3f}  side split max {r['side_split_max_pct']:4.1f}%")
    if args.kernels:  # a subset: print only, keep the committed tables whole
        return
    write_csv(RESULTS / "drift.csv", rows, "stamped launches (runs 22, 29, 57, 59): measured, scheduled and shuffled "
                  "timelines replayed through the LRU L2, sharer gaps, split by L2 side; python -m experiments.research.drift")
    if args.threshold:
        loops = mma_loop_within_sm_cv()
        print("WGMMA-only loops (run 23), within-SM CV per wave:", loops)
        trows = []
        for name in [nm for nm in labels("run29") if schedule_of(nm)[1] == 8192
                     and (not args.kernels or nm in args.kernels)]:
            ln = launch("run29", name)
            t = noise_threshold(ln["schedule"], ln["k"], ln["ctas_per_sm"], float(np.median(ln["durations"])))
            t = {"kernel": name, "ctas_per_sm": ln["ctas_per_sm"], **t}
            trows.append(t)
            print(f"{name:18s} threshold CV {t['threshold_cv']}  " +
                  " ".join(f"{sg}: {t[f'gb_at_{sg}']:.2f} GB/{t[f'gap_at_{sg}']:.1f} us" for sg in SIGMAS), flush=True)
        write_csv(RESULTS / "drift_threshold.csv", trows,
                      f"i.i.d. per-CTA noise on run 29's median duration, scheduled and replayed; WGMMA-only loops' "
                      f"within-SM CV (run 23): {loops}; python -m experiments.research.drift --threshold")


if __name__ == "__main__":
    main()
