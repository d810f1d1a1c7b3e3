"""The L2 as an LRU cache, replayed over a timeline of the whole grid's CTAs.

`engines.memory_traffic` assumes every panel is fetched from HBM once per wave that uses
it: the CTAs of a wave read each K slice side by side, and nothing survives to the next
wave. This module instead replays *when* each CTA reads each K slice of its A and B panels
(and writes its C tile) through an LRU of the profile's L2 capacity, and counts the bytes
that miss. Two uses:

  * a lockstep timeline (`lockstep_timeline`: waves of CTAs that start together and advance
    at one rate) gives the per-wave figure at large K, and the cross-wave reuse that the
    per-wave figure misses when A and B fit in L2 (K = 1024 at 8192 x 8192: 32 MB);
  * a measured timeline (the start and end stamps the clock probe writes per CTA,
    experiments/l2_replay.py) tests the cache on its own: how many misses the CTAs' real
    spread in time costs, against Nsight Compute's dram__bytes_read.

What it leaves out: the fill latency (a read of a line whose fill is in flight counts as a
hit; `LruL2` has fill times for sim/timeline.py, which needs them), L2's two partitions and
its hashing (one LRU; its capacity `l2_lru_bytes` is measured: experiments/l2_capacity.py),
and progress inside a CTA other than uniform over its K loop.
"""
from __future__ import annotations

import heapq
import math
from collections import OrderedDict

import numpy as np

from gemm.schedule import INPUT_BYTES, Schedule

from .engines import grid, tile_order

# key spaces of the three kinds of cached blocks (A slice, B slice, C tile)
_A, _B, _C = 0, 1, 2


class LruL2:
    """One LRU of `capacity` bytes over cached blocks (any hashable tag), with fill times:
    a block read while its fill is on its way is ready when the fill lands. Misses queue
    on one GPU-wide HBM stream of `hbm_bytes_per_ns`; a hit is ready `hit_ns` after the
    read, a miss `miss_ns` after it (or when the HBM queue has delivered it, the later).
    With the defaults only the bytes count (the replay below)."""

    def __init__(self, capacity: int, hit_ns: float = 0.0, miss_ns: float = 0.0,
                 hbm_bytes_per_ns: float = math.inf):
        self.capacity, self.hit_ns, self.miss_ns, self.hbm_bpns = capacity, hit_ns, miss_ns, hbm_bytes_per_ns
        self.lru: OrderedDict = OrderedDict()  # tag -> (fill time, bytes)
        self.held = 0
        self.miss_bytes = 0
        self.hbm_free = 0.0

    def insert(self, tag, nbytes: int, fill: float) -> None:
        """Put a block in (most recent), evicting the least recent ones beyond capacity."""
        old = self.lru.pop(tag, None)
        if old is not None:
            self.held -= old[1]
        self.lru[tag] = (fill, nbytes)
        self.held += nbytes
        while self.held > self.capacity:
            self.held -= self.lru.popitem(last=False)[1][1]

    def read(self, tag, nbytes: int, t: float, side: int = 0) -> tuple[float, int]:
        """(when the block read at `t` is in L2, bytes that missed); one L2, so `side` is moot."""
        entry = self.lru.get(tag)
        if entry is not None:
            self.lru.move_to_end(tag)
            return max(t + self.hit_ns, entry[0]), 0
        self.miss_bytes += nbytes
        self.hbm_free = max(self.hbm_free, t) + nbytes / self.hbm_bpns
        fill = max(t + self.miss_ns, self.hbm_free)
        self.insert(tag, nbytes, fill)
        return fill, nbytes


class PartitionedL2:
    """The L2 as two partitions of `capacity` / 2 bytes, each an LRU: half of every block's
    lines are homed in each (by address); a reader on the other side keeps a copy in its own
    partition. A read from side `side` of a block's half homed at `home`: a hit in its own
    partition is near; otherwise, when the half is homed on the other side and still there,
    a far hit (a copy is made near); otherwise a miss from HBM, filled into the home
    partition and, for a reader on the other side, into its own as well. (experiments/l2_sides.py,
    l2_sides.csv: lines another SM brought in are all near for a reader on that SM's side and
    half far for one on the other side.)"""

    def __init__(self, capacity: int, hit_ns: float = 0.0, far_ns: float = 0.0, miss_ns: float = 0.0,
                 hbm_bytes_per_ns: float = math.inf):
        self.parts = (LruL2(capacity // 2), LruL2(capacity // 2))
        self.hit_ns, self.far_ns, self.miss_ns, self.hbm_bpns = hit_ns, far_ns, miss_ns, hbm_bytes_per_ns
        self.miss_bytes = 0
        self.far_bytes = 0      # far hits
        self.fabric_bytes = 0   # reads forwarded to the other partition: far hits and far-homed misses
        self.hbm_free = 0.0

    def read(self, tag, nbytes: int, t: float, side: int) -> tuple[float, int]:
        """(when the whole block read at `t` from an SM on `side` is in reach, bytes that missed)."""
        ready, missed = t, 0
        near = self.parts[side]
        half = nbytes // 2
        for home in (0, 1):
            key = (tag, home)
            entry = near.lru.get(key)
            if entry is not None:
                near.lru.move_to_end(key)
                r = max(t + self.hit_ns, entry[0])
            else:
                owner = self.parts[home]
                entry = owner.lru.get(key) if home != side else None
                if home != side:
                    self.fabric_bytes += half
                if entry is not None:
                    owner.lru.move_to_end(key)
                    r = max(t + self.far_ns, entry[0])
                    self.far_bytes += half
                else:
                    missed += half
                    self.hbm_free = max(self.hbm_free, t) + half / self.hbm_bpns
                    r = max(t + self.miss_ns, self.hbm_free)
                    if home != side:
                        owner.insert(key, half, r)
                near.insert(key, half, r)
            ready = max(ready, r)
        self.miss_bytes += missed
        return ready, missed

    def insert(self, tag, nbytes: int, fill: float) -> None:
        """A written block (C): each half in its home partition."""
        for home in (0, 1):
            self.parts[home].insert((tag, home), nbytes // 2, fill)


def lockstep_timeline(n_ctas: int, per_wave: int, cta_time: float, launch_gap: float = 0.0):
    """Start times and durations of CTAs run in full waves: wave w starts at w x cta_time."""
    ids = np.arange(n_ctas)
    starts = (ids // per_wave) * (cta_time + launch_gap)
    return starts.astype(float), np.full(n_ctas, float(cta_time))


def scheduled_timeline(durations, ctas_per_sm: int, sm_count: int, dispatch_order=None,
                       sm_factor=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, durations, SM) of every CTA in launch order as the block scheduler runs them:
    the first wave goes out at once, `ctas_per_sm` per SM in `dispatch_order` (default 0..),
    and each later CTA takes the slot that frees first. A CTA runs for its `durations` entry,
    times its SM's `sm_factor` when given. With each CTA's measured duration this puts the
    CTAs where the H200 put them (experiments/drift.py); with durations from a model it is
    the replay's timeline without the per-step detail of sim/timeline.py."""
    base = np.asarray(durations, float)
    order = list(dispatch_order if dispatch_order is not None else range(sm_count))
    factor = np.ones(sm_count) if sm_factor is None else np.asarray(sm_factor, float)
    placement = [sm for _ in range(ctas_per_sm) for sm in order]
    n = base.size
    starts, dur, sms = np.zeros(n), np.zeros(n), np.zeros(n, np.int64)
    free: list = []  # (when the slot frees, launch index, SM)
    for i in range(n):
        if i < len(placement):
            t, sm = 0.0, placement[i]
        else:
            t, _, sm = heapq.heappop(free)
        starts[i], sms[i], dur[i] = t, sm, base[i] * factor[sm]
        heapq.heappush(free, (t + dur[i], i, sm))
    return starts, dur, sms


def wave_start_spreads(starts, per_wave: int) -> np.ndarray:
    """The 5-95% spread of the start times of each full wave's CTAs (launch order), in the
    units of `starts`: how far the CTAs that would run side by side have drifted apart."""
    waves = len(starts) // per_wave
    p5, p95 = np.percentile(np.asarray(starts, float)[:waves * per_wave].reshape(waves, per_wave), [5, 95], axis=1)
    return p95 - p5


def probe_timeline(records):
    """(starts, durations) in microseconds from the clock probe's per-CTA words
    (clock0, globaltimer0 ns, clock1, globaltimer1 ns, smid; gemm.kernels.tiles), launch order."""
    rec = np.asarray(records).astype(np.int64)
    t0 = rec[:, 1].min()
    return (rec[:, 1] - t0) / 1e3, (rec[:, 3] - rec[:, 1]) / 1e3


def probe_clock_ghz(records) -> np.ndarray:
    """Each CTA's counted SM clock (GHz: %clock64 cycles over %globaltimer ns) from the clock
    probe's words; any leading shape (launches x CTAs x words gives launches x CTAs)."""
    rec = np.asarray(records).astype(np.int64)
    return (rec[..., 2] - rec[..., 0]) / (rec[..., 3] - rec[..., 1])


def replay(s: Schedule, m: int, n: int, k: int, starts, durations, l2_bytes: int,
           slices_per_step: int = 1, write_c: bool = True, sides=None) -> dict:
    """HBM read bytes of A and B when the CTAs (in launch order) run at `starts` for
    `durations` (any one time unit), each reading K slice j of its panels at
    start + (j + 0.5) / k_slices x duration, through an LRU L2 of `l2_bytes`.

    `slices_per_step` groups that many block_k slices into one cached block (faster, coarser).
    `write_c`: each CTA's C tile is written into L2 at its end (write-back: it holds
    capacity until evicted) -- what keeps A and B from fitting when they alone would."""
    tm, tn = grid(s, m, n)
    rows, cols = tile_order(s, tm, tn)
    n_ctas = tm * tn
    starts = np.asarray(starts, float)
    durations = np.asarray(durations, float)
    if starts.shape != (n_ctas,) or durations.shape != (n_ctas,):
        raise ValueError(f"starts and durations need one entry per CTA ({n_ctas}), "
                         f"got {starts.shape} and {durations.shape}")
    if slices_per_step < 1:
        raise ValueError(f"slices_per_step must be >= 1, got {slices_per_step}")
    k_slices = math.ceil(k / s.block_k)
    steps = math.ceil(k_slices / slices_per_step)
    slice_k = [min(slices_per_step * s.block_k, k - j * slices_per_step * s.block_k) for j in range(steps)]
    a_bytes = np.array([min(s.block_m, m) * kk * INPUT_BYTES for kk in slice_k])
    b_bytes = np.array([min(s.block_n, n) * kk * INPUT_BYTES for kk in slice_k])
    c_bytes = min(s.block_m, m) * min(s.block_n, n) * INPUT_BYTES

    j = np.arange(steps)
    t = starts[:, None] + (j[None, :] + 0.5) / steps * durations[:, None]
    # one event per (CTA, step): its A block then its B block; C at the CTA's end
    key_a = (rows[:, None] * steps + j[None, :]).ravel()
    key_b = (cols[:, None] * steps + j[None, :]).ravel()
    times = t.ravel()
    kinds = [np.full(times.size, _A), np.full(times.size, _B)]
    keys = [key_a, key_b]
    sizes = [np.tile(a_bytes, n_ctas), np.tile(b_bytes, n_ctas)]
    all_t = [times, times]
    if write_c:
        all_t.append(starts + durations)
        kinds.append(np.full(n_ctas, _C))
        keys.append(np.arange(n_ctas))
        sizes.append(np.full(n_ctas, c_bytes))
    # order by time; at equal times by CTA then A before B (lexsort: last key is primary)
    tt = np.concatenate(all_t)
    kind = np.concatenate(kinds)
    order = np.lexsort((kind, tt))
    kind, key, size = kind[order], np.concatenate(keys)[order], np.concatenate(sizes)[order]

    # the reading CTA's L2 side (all 0 for one L2): A and B events are per (CTA, step), C per CTA
    cta = np.concatenate([np.repeat(np.arange(n_ctas), steps)] * 2 + ([np.arange(n_ctas)] if write_c else []))
    side_of = np.asarray(sides)[cta[order]] if sides is not None else np.zeros(len(order), np.int64)
    missed_by_cta = np.zeros(n_ctas, np.int64)
    if sides is None:   # one LRU, bytes only: the loop inlined (the replay's hot path)
        reads, miss = _lru_bytes(kind.tolist(), key.tolist(), size.tolist(), cta[order].tolist(), l2_bytes,
                                 missed_by_cta)
    else:
        cache = PartitionedL2(l2_bytes)
        reads = 0
        for kd, kk, nb, when, side, c in zip(kind.tolist(), key.tolist(), size.tolist(), tt[order].tolist(),
                                             side_of.tolist(), cta[order].tolist()):
            tag = kk * 3 + kd
            if kd == _C:
                cache.insert(tag, nb, when)
            else:
                missed_by_cta[c] += cache.read(tag, nb, when, side)[1]
                reads += nb
        miss = cache.miss_bytes
    out = {"hbm_read_bytes": int(miss), "l2_to_sm_bytes": int(reads), "l2_hit_rate": 1.0 - miss / reads,
           "hbm_read_bytes_by_cta": missed_by_cta}
    if sides is not None:
        out.update(far_hit_bytes=int(cache.far_bytes), fabric_read_bytes=int(cache.fabric_bytes))
    return out


def _lru_bytes(kinds, keys, sizes, ctas, capacity, missed_by_cta) -> tuple[int, int]:
    """LruL2's read and insert, bytes only, over events already in time order: (bytes read,
    bytes missed); adds each CTA's misses into `missed_by_cta`."""
    lru: OrderedDict = OrderedDict()   # tag -> bytes
    held = reads = miss = 0
    get, move, pop, popitem = lru.get, lru.move_to_end, lru.pop, lru.popitem
    per_cta = [0] * len(missed_by_cta)
    for kd, kk, nb, c in zip(kinds, keys, sizes, ctas):
        tag = kk * 3 + kd
        if kd != _C:
            reads += nb
            if get(tag) is not None:
                move(tag)
                continue
            miss += nb
            per_cta[c] += nb
        else:
            old = pop(tag, None)
            if old is not None:
                held -= old
        lru[tag] = nb
        held += nb
        while held > capacity:
            held -= popitem(last=False)[1]
    missed_by_cta += np.asarray(per_cta, np.int64)
    return reads, miss
