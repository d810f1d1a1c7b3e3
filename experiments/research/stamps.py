"""What the clock probe's per-CTA stamps say about one launch (no GPU).

The clock probe (gemm.kernels.tiles, clock_probe=True) writes per CTA, in launch order, its
start and end on %clock64 (SM cycles) and on %globaltimer (ns), and its SM. These helpers
turn one launch's words into the CTAs per SM, the settled clock and cycles, the replayed DRAM
bytes and the spread in time between CTAs that share a panel; the studies that stamp
launches (wave_profile, launch_spread, clock_transient, power_draw, drift) share them.
"""
from __future__ import annotations

import numpy as np

from sim.l2cache import probe_timeline, replay

SETTLED = 3      # waves from here on: the clock has settled and the drift has happened


def resident_per_sm(starts_us, durations_us, sm_count: int) -> int:
    """CTAs per SM in the launch: those that started before the first one ended, per SM."""
    first_end = float(np.min(starts_us + durations_us))
    return max(1, round(int(np.sum(starts_us < first_end)) / sm_count))


def settled(s, k: int, records, prof, loads: bool = True) -> dict:
    """One stamped launch of schedule `s` (8192 x 8192 x k): every CTA's start, duration (us),
    cycles and SM; the CTAs per SM; the median clock (GHz) and cycles per CTA (k) of the waves
    from SETTLED on; with `loads`, the replay of the launch's timeline through the profile's
    LRU: its DRAM read bytes and each CTA's share of its A and B bytes that missed."""
    rec = np.asarray(records).astype(np.int64)
    starts, durations = probe_timeline(rec)
    cycles = (rec[:, 2] - rec[:, 0]).astype(float)
    c = resident_per_sm(starts, durations, prof.sm_count)
    per_wave = c * prof.sm_count
    later = slice(min(SETTLED, len(rec) // per_wave - 1) * per_wave, len(rec) // per_wave * per_wave)
    out = {"starts": starts, "durations": durations, "cycles": cycles, "sm": rec[:, 4], "ctas_per_sm": c,
           "later": later, "clock_ghz": float(np.median(cycles[later] / (durations[later] * 1e3))),
           "kclk": round(float(np.median(cycles[later])) / 1e3, 1), "share": None, "replayed_bytes": None}
    if loads:
        r = replay(s, 8192, 8192, k, starts, durations, prof.l2_lru_bytes)
        out["share"] = r["hbm_read_bytes_by_cta"] / ((s.block_m + s.block_n) * k * 2)
        out["replayed_bytes"] = r["hbm_read_bytes"]
    return out


def start_gap(starts, distance: int = 64) -> float:
    """Median time between the starts of CTAs `distance` launches apart (in the column raster of
    a 64-row grid, an A panel's sharers; docs/research/notes.md 67), in the units of `starts`."""
    s = np.asarray(starts, float)
    return float(np.median(np.abs(s[distance:] - s[:-distance])))


def sharer_gaps(records, distance: int = 64) -> dict:
    """From one launch's per-CTA stamps (launch order): how much CTA durations vary, and how far
    apart in time (us) CTAs `distance` launches apart start."""
    start_us, dur = probe_timeline(records)
    return {"duration_cv": float(dur.std() / dur.mean()), "gap_median_us": start_gap(start_us, distance)}
