"""Wave by wave, from the clock probe's stamps: time, cycles, clock, misses, and what a miss costs.
python -m experiments.research.wave_profile

The clock probe (gemm.kernels.tiles, clock_probe=True) writes per CTA its SM, its start and
end on %globaltimer (ns) and on %clock64 (SM cycles). Three questions, on runs already on disk
(no GPU):

  1. Is a kernel slow in a wave because its SMs do more work per cycle or because the clock
     fell? Per full wave (launch order): median CTA time (us), cycles (k), their ratio (the
     SM clock, GHz), the tensor floor over the cycles for kernels with WGMMAs (the CTAs that
     share an SM's tensor cores x K steps x the tile's math per step at 4096 FLOP/clk), the
     ratio of the fast-feed SMs' median time to the rest's (l2_feed_by_sm < 0.9), and the
     share of the wave's A and B bytes that miss L2 when its CTAs' measured timeline is
     replayed through the profile's LRU (sim.l2cache.replay, l2_lru_bytes).
  2. How far is the one-SM model per cycle, with the clock taken out? The model (one SM's
     CTAs, sim.schedules.simulate_sm) at the median clock the launch's later waves (3 on)
     ran at, with the per-wave miss rate the model assumes and with the replayed miss share
     of those waves, against the median cycles per CTA measured in those waves.
  3. Does a miss cost the SM that made it, or the whole GPU? Per CTA, its cycles over its
     SM's feed factor are fitted on its own replayed miss share (`own`), and on that plus
     the miss share of all CTAs running at its midpoint (`own + GPU-wide`), least squares;
     slopes are per unit of the intercept (the hit-only cycles). Clean only where the clock
     holds still (the load-only loops, ~1.93-1.98 GHz); in the GEMMs the clock moves by
     wave (printed beside) and the L2's cost in cycles with it. Not for the WGMMA-only
     loops (they load their ring once).

Runs read (experiments/results/h200-sxm/logs): run 18 (six GEMMs stamped by
`calibrate_clock --dump` after 20 warm-up launches: the clock of back-to-back timing), run 23
(load-only and WGMMA-only loops, `bash experiments/research/device.sh loop-stamps`), run 29 (the GEMMs
whose DRAM bytes Nsight Compute measured in the same launch, one profiler pass).
Writes wave_profile.csv and launches.csv there.
"""
from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from tqdm import tqdm

from experiments import catalog
from experiments.paths import logs_dir, results_dir, write_csv
from experiments.research.l2_same_launch import KERNELS as SAME_LAUNCH
from experiments.research.stamps import settled
from sim.engines import memory_traffic
from sim.hardware import load_profile
from sim.schedules import simulate_sm

RESULTS = results_dir()
LOGS = logs_dir()
GPU = "h200-sxm"
FAST_FEED = 0.9  # l2_feed_by_sm below this: the fifth of the SMs that pull ~25% faster


def runs() -> list[dict]:
    """(run, kernel, schedule, K, has WGMMAs, the probe's words) of every stamped launch read."""
    probes = np.load(LOGS / "run18" / "probes.npz")
    out = [{"run": "run18", "kernel": name, "schedule": catalog.schedule(name), "k": 8192, "mmas": True,
            "records": probes[name]} for name in probes.files]
    for file, mmas in (("load_probes.npz", False), ("mma_probes.npz", True)):
        probes = np.load(LOGS / "run23" / file)
        out += [{"run": "run23", "kernel": name, "schedule": catalog.schedule(name), "k": 8192, "mmas": mmas,
                 "records": probes[name]} for name in probes.files]
    probes = np.load(LOGS / "run29" / "probes.npz")
    out += [{"run": "run29", "kernel": name, "schedule": catalog.schedule(key), "k": k, "mmas": True,
             "records": probes[name]} for name, key, k in SAME_LAUNCH]
    return out


def gpu_wide_share(starts, durations, share) -> np.ndarray:
    """The mean miss share of the CTAs running at each CTA's midpoint (itself included)."""
    mid = starts + durations / 2
    order = np.argsort(starts)
    out = np.empty_like(share)
    for i in range(len(share)):  # CTAs alive at mid[i]: started before, not yet ended
        alive = order[:np.searchsorted(starts[order], mid[i], side="right")]
        alive = alive[starts[alive] + durations[alive] >= mid[i]]
        out[i] = share[alive].mean()
    return out


def fit(y, *regressors) -> tuple[np.ndarray, float]:
    """Least squares y = c0 + sum ci xi: (c0, c1/c0, ...), R^2."""
    x = np.column_stack([np.ones_like(y), *regressors])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ coef
    return np.concatenate([[coef[0]], coef[1:] / coef[0]]), float(1 - resid.var() / y.var())


def profile_run(job: dict, prof) -> tuple[list[dict], dict]:
    s, k = job["schedule"], job["k"]
    loads = job["run"] != "run23" or not job["mmas"]  # the WGMMA-only loops read nothing per K step
    st = settled(s, k, job["records"], prof, loads)
    starts, durations, cycles, sm, c, share = (st[x] for x in ("starts", "durations", "cycles", "sm",
                                                               "ctas_per_sm", "share"))
    fast = np.asarray(prof.l2_feed_by_sm)[sm] < FAST_FEED
    steps = -(-k // s.block_k)
    floor = c * steps * 2 * s.block_m * s.block_n * s.block_k / prof.tensor_flops_per_clk if job["mmas"] else None
    per_wave = c * prof.sm_count
    waves = []
    for w in range(len(starts) // per_wave):
        i = slice(w * per_wave, (w + 1) * per_wave)
        d, cy = durations[i], cycles[i]
        waves.append({"run": job["run"], "kernel": job["kernel"], "wave": w, "ctas_per_sm": c,
                      "cta_us": round(float(np.median(d)), 1), "cta_kclk": round(float(np.median(cy)) / 1e3, 1),
                      "clock_ghz": round(float(np.median(cy / (d * 1e3))), 3),
                      "tensor_floor_over_cycles": round(floor / float(np.median(cy)), 3) if floor else "",
                      "fast_over_slow_sm_time": round(float(np.median(d[fast[i]]) / np.median(d[~fast[i]])), 3),
                      "miss_share": round(float(share[i].mean()), 3) if loads else ""})
    later = st["later"]
    at_clock = dataclasses.replace(prof, clock_ghz=st["clock_ghz"])
    per_wave_miss = 1.0 - memory_traffic(s, 8192, 8192, k, per_wave)["l2_hit_rate"]
    model = {f"model_kclk_{label}": round(simulate_sm(s, at_clock, c, steps, miss, active_sms=prof.sm_count,
                                                      mmas=job["mmas"], loads=loads)["clk"] / 1e3, 1)
             for label, miss in (("per_wave_misses", per_wave_miss),
                                 ("replayed_misses", float(share[later].mean()) if loads else per_wave_miss))}
    launch = {"run": job["run"], "kernel": job["kernel"], "ctas_per_sm": c,
              "clock_ghz_first_wave": waves[0]["clock_ghz"], "clock_ghz_settled": round(st["clock_ghz"], 3),
              "measured_kclk_settled": st["kclk"], **model}
    launch["model_over_measured"] = round(launch["model_kclk_replayed_misses"] / launch["measured_kclk_settled"], 3)
    if not loads:
        return waves, launch
    y = cycles / np.asarray(prof.l2_feed_by_sm)[sm]
    (t_own, beta_own), r2_own = fit(y, share)
    (t_both, beta, gamma), r2_both = fit(y, share, gpu_wide_share(starts, durations, share))
    launch.update({
        "miss_share": round(float(share.mean()), 3),
        "own_hit_kclk": round(t_own / 1e3, 1), "own_slope": round(beta_own, 2), "own_r2": round(r2_own, 2),
        "both_hit_kclk": round(t_both / 1e3, 1), "both_own_slope": round(beta, 2),
        "both_gpu_wide_slope": round(gamma, 2), "both_r2": round(r2_both, 2)})
    return waves, launch


def _print_waves(run: str, kernel: str, ws: list[dict]) -> None:
    picks = sorted({0, 1, 2, len(ws) // 2, len(ws) - 1})
    print(f"{run:6s} {kernel:28s} " + " | ".join(
        f"w{ws[i]['wave']} {ws[i]['cta_us']:.0f}/{ws[i]['cta_kclk']:.0f}/{ws[i]['clock_ghz']:.2f}/"
        f"{ws[i]['tensor_floor_over_cycles'] or '-'}/{ws[i]['fast_over_slow_sm_time']:.2f}/{ws[i]['miss_share'] or '-'}"
        for i in picks))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    prof = load_profile(GPU)
    waves, launches = [], []
    for job in tqdm(runs(), desc="stamped launches", unit="launch"):
        w, launch = profile_run(job, prof)
        waves += w
        launches.append(launch)
    if not args.no_write:
        write_csv(RESULTS / "wave_profile.csv", waves,
                      "per full wave of the clock probe's stamps (runs 18, 23, 29): medians per CTA, the clock, "
                      "the tensor floor, fast-feed SMs over the rest, replayed miss share; "
                      "python -m experiments.research.wave_profile")
        write_csv(RESULTS / "launches.csv", launches,
                      "per launch: the settled waves' clock and cycles per CTA against the one-SM model at that "
                      "clock; cycles over the SM's feed factor fitted on the CTA's own replayed miss share, and on "
                      "that plus the GPU-wide one (slopes per unit of the hit-only intercept); "
                      "python -m experiments.research.wave_profile")
    print(f"{'run':6s} {'kernel':28s} waves: us / kcycles / GHz / tensor floor share / fast:slow / miss share")
    for ln in launches:
        _print_waves(ln["run"], ln["kernel"], [w for w in waves if (w["run"], w["kernel"]) == (ln["run"], ln["kernel"])])
    print(f"\n{'run':6s} {'kernel':28s} settled: GHz  kcycles  model (per-wave / replayed misses)  "
          "| miss  own: hit kclk, slope, R2 | own + GPU-wide: hit kclk, own, GPU-wide, R2")
    for ln in launches:
        fits = (f"| {ln['miss_share']:4.2f}  {ln['own_hit_kclk']:6.1f} {ln['own_slope']:+5.2f} {ln['own_r2']:4.2f} "
                f"| {ln['both_hit_kclk']:6.1f} {ln['both_own_slope']:+5.2f} {ln['both_gpu_wide_slope']:+5.2f} "
                f"{ln['both_r2']:4.2f}" if "miss_share" in ln else "")
        print(f"{ln['run']:6s} {ln['kernel']:28s} {ln['clock_ghz_settled']:5.2f} {ln['measured_kclk_settled']:7.1f}  "
              f"{ln['model_kclk_per_wave_misses']:7.1f} / {ln['model_kclk_replayed_misses']:7.1f} "
              f"({ln['model_over_measured']:.3f})  {fits}")


if __name__ == "__main__":
    main()
