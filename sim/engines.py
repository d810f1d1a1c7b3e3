"""The engines of one SM, occupancy, and the grid of work a launch hands out.

Per SM (a SimPy environment, time in SM clocks):
  TensorCores  one queue for the SM's four tensor cores: a WGMMA group occupies them for
               its N-dependent time; commit / wait_group(n) semantics per warpgroup.
  TmaEngine    issue cost on the issuing thread, bytes in flight, a latency, then the
               transfer over the SM's L2 -> SM port and, for bytes that miss L2, the SM's
               share of HBM, side by side; completion signalled to an Mbarrier as
               transaction bytes. A multicast box (clusters) costs each SM of the cluster
               its share of the port.
  StorePath    the SM's path to L2 for the epilogue's stores (st.global or a TMA store).
  Mbarrier     phase, arrival count and transaction bytes; waits by parity.
  BlockBarrier bar.sync: every party must arrive; then it costs `bar_sync_clk`.
Across SMs (analytic): the grid (`launch_grid`: tiles, split-K slices, batches, swap-AB,
persistent CTAs, clusters), occupancy (`residency`), wave quantization (`waves`) and the
bytes (`memory_traffic`): what every CTA reads over the L2 -> SM path, and what a wave's
CTAs share so that HBM carries it once.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import simpy

from gemm.schedule import INPUT_BYTES, WGMMA_K, WGMMA_M, Schedule, ctas_by_registers

from .hardware import GpuProfile

ACCUMULATOR_BYTES = 4   # an fp32 split-K partial


# ----------------------------------------------------------------------------------
# occupancy and waves
# ----------------------------------------------------------------------------------
def registers_per_thread(s: Schedule, gpu: GpuProfile) -> int:
    """Registers per thread at launch. Without setmaxnreg: the accumulators plus the kernel's
    other registers. With it: the count every thread starts with (`Schedule.launch_registers`,
    what the launch bounds give ptxas), which the roles then move between them."""
    if s.uses_setmaxnreg:
        return s.launch_registers
    return min(gpu.max_regs_per_thread, s.accumulator_registers + gpu.reg_overhead)


def residency(s: Schedule, gpu: GpuProfile, registers: int | None = None) -> dict:
    """CTAs per SM and what limits it: shared memory, registers, threads, the block cap.
    `registers`: the built kernel's registers per thread (ptxas), instead of the estimate."""
    smem = s.shared_bytes + gpu.smem_reserved_per_block
    regs = registers or registers_per_thread(s, gpu)
    limits = {
        "smem": gpu.smem_per_sm // smem,
        "registers": ctas_by_registers(regs, s.threads, gpu.regs_per_sm, gpu.reg_alloc_unit),
        "threads": gpu.max_threads_per_sm // s.threads,
        "blocks": gpu.max_ctas_per_sm,
    }
    ctas = min(limits.values())
    return {"ctas_per_sm": ctas, "limited_by": min(limits, key=limits.get), "limits": limits,
            "registers_per_thread": regs, "smem_per_cta": smem}


def gemm_dims(s: Schedule, m: int, n: int) -> tuple[int, int]:
    """The (M, N) the kernel tiles: swap-AB computes C^T = B^T A^T, so its M is the user's N."""
    return (n, m) if s.swap_ab else (m, n)


def grid(s: Schedule, m: int, n: int) -> tuple[int, int]:
    """C tiles along the kernel's M and N."""
    gm, gn = gemm_dims(s, m, n)
    return math.ceil(gm / s.block_m), math.ceil(gn / s.block_n)


def k_split(s: Schedule, k: int) -> tuple[int, int]:
    """(K iterations per slice, slices that have work): split-K cuts the K tiles into
    `split_k` slices of equal length; the last ones may be shorter or empty."""
    total = math.ceil(k / s.block_k)
    per = math.ceil(total / s.split_k)
    return per, math.ceil(total / per)


@dataclass(frozen=True)
class LaunchGrid:
    """What one launch hands out. A work unit is one C tile of one K slice of one batch."""
    gm: int              # the kernel's M and N (swapped under swap-AB)
    gn: int
    tm: int              # tiles along them
    tn: int
    k_iters: int         # K iterations per work unit
    slices: int          # K slices with work (split-K)
    batch: int
    units: int           # work units
    ctas: int            # CTAs launched
    units_per_cta: int   # the most units one CTA runs (persistent kernels walk several)
    cluster_idle: int    # CTAs of a cluster left without a tile (odd tile counts), counted in ctas
    a_rows: float        # mean rows of an A box inside the matrix (edge tiles load fewer)
    b_rows: float
    k_fill: float        # mean share of a K tile inside the matrix (the last K tile may be partial)
    stream_k_iters: int = 0   # stream-K: K iterations one CTA runs in all (0: whole units)
    stream_k_run: int = 0     # of them, its run of the shared tiles' iterations


def launch_grid(s: Schedule, m: int, n: int, k: int, batch: int = 1, slots: int | None = None) -> LaunchGrid:
    """The grid of a launch. `slots`: CTAs the GPU holds at once (SMs x CTAs per SM), which a
    persistent kernel launches (whole clusters of them) and walks the units with."""
    gm, gn = gemm_dims(s, m, n)
    tm, tn = grid(s, m, n)
    k_iters, slices = k_split(s, k)
    units = tm * tn * slices * batch
    cm, cn = s.cluster_m, s.cluster_n
    # a cluster takes cm x cn neighbouring tiles; at the edges some of its CTAs have none
    padded = math.ceil(tm / cm) * cm * math.ceil(tn / cn) * cn * slices * batch
    sk_iters = sk_run = 0
    if s.persistent:
        cap = max(s.cluster_size, (slots or padded) // s.cluster_size * s.cluster_size)
        ctas = cap if s.stream_k else min(padded, cap)
        per_cta = math.ceil(padded / ctas)
        if s.stream_k and units % ctas:
            # the kernel's split: the last partial wave's tiles and stream_k_waves full waves
            # before them are shared out evenly by K iteration; the waves before run whole tiles
            whole_waves = max(0, units // ctas - s.stream_k_waves)
            sk_run = math.ceil((units - whole_waves * ctas) * k_iters / ctas)
            sk_iters = whole_waves * k_iters + sk_run
    else:
        ctas, per_cta = padded, 1
    return LaunchGrid(gm=gm, gn=gn, tm=tm, tn=tn, k_iters=k_iters, slices=slices, batch=batch, units=units,
                      ctas=ctas, units_per_cta=per_cta, cluster_idle=padded - units,
                      a_rows=gm / tm, b_rows=gn / tn, k_fill=k / (k_iters * slices * s.block_k),
                      stream_k_iters=sk_iters, stream_k_run=sk_run)


def last_round_ctas(lg: LaunchGrid) -> int:
    """A persistent launch's CTAs that walk one unit more than the rest (its last, partial
    round); 0 when every CTA walks as many units (or each one, or stream-K shares them out)."""
    if lg.stream_k_iters or lg.units_per_cta < 2:
        return 0
    padded = lg.units + lg.cluster_idle
    return padded - (lg.units_per_cta - 1) * lg.ctas if padded % lg.ctas else 0


def last_round_share(g, busy: int, ctas: int) -> float:
    """The time of a persistent launch's last round, in which `busy` of its `ctas` CTAs have a
    tile, over a whole round's: 1 - last_round_slope x the grid's idle share, at least
    last_round_floor (the clock and the L2 and HBM a thin round's SMs have to themselves)."""
    return min(1.0, max(g.last_round_floor, 1.0 - g.last_round_slope * (1.0 - busy / ctas)))


def waves(n_ctas: int, sm_count: int, ctas_per_sm: int) -> dict:
    """Wave quantization: full waves of sm_count x ctas_per_sm CTAs, then a tail."""
    per_wave = sm_count * ctas_per_sm
    full, rest = divmod(n_ctas, per_wave)
    tail_per_sm = math.ceil(rest / sm_count) if rest else 0
    return {"ctas": n_ctas, "per_wave": per_wave, "full": full, "tail_ctas": rest,
            "tail_ctas_per_sm": tail_per_sm, "waves": full + (1 if rest else 0),
            "waves_exact": n_ctas / per_wave}


def tile_order(s: Schedule, tm: int, tn: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of each C tile in launch order (or in a persistent CTA's walk), as the kernels
    order them (gemm/kernels/tiles.py make_unit_corner): the raster walks the grid of units, a
    unit being a cluster's cluster_m x cluster_n adjacent tiles (raster_group counts unit rows),
    and a unit's tiles follow one another in cluster rank order; a partner past the edge has no
    tile. Cached: the arrays are shared, read them only."""
    return _cluster_tile_order(s.raster, s.raster_group if s.raster == "grouped" else 0, tm, tn,
                               s.cluster_m, s.cluster_n)


@functools.lru_cache(maxsize=256)
def _cluster_tile_order(raster: str, g: int, tm: int, tn: int, cm: int, cn: int) -> tuple[np.ndarray, np.ndarray]:
    if cm == 1 and cn == 1:
        return _tile_order(raster, g, tm, tn)
    unit_rows, unit_cols = _tile_order(raster, g, -(-tm // cm), -(-tn // cn))
    rank = np.arange(cm * cn)[None, :]             # the kernels multicast along one axis only
    rows = (unit_rows[:, None] * cm + rank % cm).ravel()
    cols = (unit_cols[:, None] * cn + rank % cn).ravel()
    inside = (rows < tm) & (cols < tn)
    return rows[inside], cols[inside]


@functools.lru_cache(maxsize=256)
def _tile_order(raster: str, g: int, tm: int, tn: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.arange(tm * tn)
    if raster == "row":
        return ids // tn, ids % tn
    if raster == "column":
        return ids % tm, ids // tm
    # grouped: G tile rows at a time, column-major inside the group
    group = ids // (g * tn)
    first = group * g
    size = np.minimum(g, tm - first)
    local = ids % (g * tn)
    return first + local % size, local // size


def memory_traffic(s: Schedule, m: int, n: int, k: int, per_wave: int, batch: int = 1,
                   l2_lru_bytes: int | None = None) -> dict:
    """Bytes over the L2 -> SM path and from HBM (see _memory_traffic); cached on what it reads."""
    key = (s.block_m, s.block_n, s.block_k, s.raster, s.raster_group, s.cluster_m, s.cluster_n, s.split_k,
           s.split_cluster, s.swap_ab, s.k_order, m, n, k, per_wave, batch, l2_lru_bytes)
    if key not in _TRAFFIC:
        if len(_TRAFFIC) > 4096:
            _TRAFFIC.clear()
        _TRAFFIC[key] = _memory_traffic(s, m, n, k, per_wave, batch, l2_lru_bytes)
    return dict(_TRAFFIC[key])


_TRAFFIC: dict = {}


def _memory_traffic(s: Schedule, m: int, n: int, k: int, per_wave: int, batch: int = 1,
                    l2_lru_bytes: int | None = None) -> dict:
    """Bytes over the L2 -> SM path and from HBM.

    Every work unit reads its A panel (its tile's rows inside the matrix x its K slice) and
    its B panel: carried L2 -> SM, except that a cluster multicasts the operand its CTAs
    share (cluster_m CTAs along M share B: each loads 1/cluster_m of it). HBM carries a panel
    once per wave that uses it (the units of a wave run their K loops side by side, so a K
    slice fetched by one is an L2 hit for the others), plus what the epilogue writes: C, or
    under split-K the fp32 partials (their sum, by each tile's CTAs in shares, is counted in
    `sim.call`). Units run in launch order: a batch's slices one after another, each
    slice's tiles in the raster order. A wave's moving K window is assumed to fit in L2.

    With k_order="serpentine" (and an LRU of `l2_lru_bytes`) a wave walks K the other way from
    the wave before, starting where that one's last K slices are still in L2. Wave w + 1 then
    hits on the panels both waves read (S bytes) over the first y of its K walk, until its new
    misses have pushed out the lines it comes to: the L2 holds the last L bytes of wave w's P_w,
    evicted oldest first, while wave w + 1 inserts (P_w1 - S) bytes per unit of K, so a shared
    line y from the end survives while (f - y) P_w > y (P_w1 - S), f = L / P_w:
    y = L / (P_w + P_w1 - S), at most 1; the HBM read shrinks by S y."""
    gm, gn = gemm_dims(s, m, n)
    tm, tn = grid(s, m, n)
    k_iters, slices = k_split(s, k)
    rows, cols = tile_order(s, tm, tn)
    a_rows = np.minimum(s.block_m, gm - np.arange(tm) * s.block_m)      # rows inside, per tile row
    b_rows = np.minimum(s.block_n, gn - np.arange(tn) * s.block_n)
    k_len = np.minimum(k_iters * s.block_k, k - np.arange(slices) * k_iters * s.block_k)  # K per slice
    a_panel = a_rows[:, None] * k_len[None, :] * INPUT_BYTES            # [row, slice]
    b_panel = b_rows[:, None] * k_len[None, :] * INPUT_BYTES
    a_read = tn * int(a_panel.sum()) * batch
    b_read = tm * int(b_panel.sum()) * batch
    l2_bytes = a_read / s.cluster_n + b_read / s.cluster_m
    # HBM: distinct panels per wave, over the units in launch order (a product's slices one after
    # another, each slice's tiles in raster order); panel ids: (batch, slice, tile row or column)
    n_units = tm * tn * slices * batch
    wave = np.arange(n_units) // max(1, per_wave)
    layer = np.repeat(np.arange(slices * batch), tm * tn)            # batch x slices + slice, per unit
    waves_bytes = np.zeros(int(wave[-1]) + 1)       # distinct panel bytes each wave reads
    shared_bytes = np.zeros(int(wave[-1]))           # of those, the ones the next wave reads too
    for idx, count, panel in ((np.tile(rows, slices * batch), tm, a_panel), (np.tile(cols, slices * batch), tn, b_panel)):
        used = np.zeros((int(wave[-1]) + 1, slices * batch * count), bool)   # [wave, panel]: read in that wave
        used[wave, layer * count + idx] = True
        sizes = np.tile(panel.T.ravel(), batch).astype(float)
        waves_bytes += used @ sizes
        shared_bytes += (used[:-1] & used[1:]) @ sizes
    hbm = float(waves_bytes.sum())
    if s.k_order == "serpentine" and l2_lru_bytes and len(shared_bytes):
        reach = np.minimum(1.0, l2_lru_bytes / (waves_bytes[:-1] + waves_bytes[1:] - shared_bytes))
        hbm -= float(shared_bytes @ reach)
    # split-K's partials go through a workspace, except inside a cluster (shared memory)
    c_bytes = m * n * batch * (INPUT_BYTES if s.split_k == 1 or s.split_cluster else slices * ACCUMULATOR_BYTES)
    return {"l2_to_sm_bytes": int(round(l2_bytes)), "smem_fill_bytes": int(a_read + b_read),
            "hbm_read_bytes": int(hbm), "hbm_write_bytes": int(c_bytes), "hbm_bytes": int(hbm + c_bytes),
            "l2_hit_rate": 1.0 - hbm / l2_bytes,
            "a_panel_bytes": int(a_panel[0, 0]), "b_panel_bytes": int(b_panel[0, 0])}


# ----------------------------------------------------------------------------------
# the timeline recorder (one CTA, Chrome trace events)
# ----------------------------------------------------------------------------------
class Trace:
    """Spans of one CTA's roles; `None` when not tracing keeps the hot path cheap."""

    def __init__(self):
        self.spans: list[tuple[str, str, str, float, float]] = []  # (role, name, cat, t0, t1)

    def span(self, role: str, name: str, cat: str, t0: float, t1: float) -> None:
        if t1 > t0:
            self.spans.append((role, name, cat, t0, t1))

    def totals(self, role_prefix: str = "") -> dict:
        out: dict[str, float] = {}
        for role, name, cat, t0, t1 in self.spans:
            if role.startswith(role_prefix):
                out[cat] = out.get(cat, 0.0) + (t1 - t0)
        return out

    def chrome(self, clock_ghz: float, meta: dict | None = None) -> dict:
        roles = sorted({sp[0] for sp in self.spans}, key=_role_key)
        tid = {r: i + 1 for i, r in enumerate(roles)}
        ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "CTA 0 on SM 0"}}]
        ev += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": tid[r], "args": {"name": r}} for r in roles]
        ev += [{"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": tid[r], "args": {"sort_index": tid[r]}}
               for r in roles]
        us = 1e-3 / clock_ghz  # clk -> us
        for role, name, cat, t0, t1 in self.spans:
            ev.append({"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid[role],
                       "ts": round(t0 * us, 4), "dur": round((t1 - t0) * us, 4)})
        return {"traceEvents": ev, "displayTimeUnit": "ns", "otherData": meta or {}}


def _role_key(r: str) -> tuple:
    order = ["producer", "warpgroup", "consumer", "tensor", "TMA"]
    return (next((i for i, p in enumerate(order) if r.startswith(p)), 9), r)


# ----------------------------------------------------------------------------------
# the engines of one SM
# ----------------------------------------------------------------------------------
class Mbarrier:
    """mbarrier with an expected arrival count and transaction bytes; waits by parity."""

    def __init__(self, env: simpy.Environment, count: int):
        self.env, self.count = env, count
        self.phase = 0           # completed phases
        self.pending = count
        self.tx = 0
        self._waiters: list[tuple[int, simpy.Event]] = []

    def _maybe_flip(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count
            parity = (self.phase - 1) & 1
            keep = []
            for p, ev in self._waiters:
                (ev.succeed() if p == parity else keep.append((p, ev)))
            self._waiters = keep

    def arrive(self, expect_tx: int = 0) -> None:
        self.tx += expect_tx
        self.pending -= 1
        self._maybe_flip()

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._maybe_flip()

    def wait(self, parity: int) -> simpy.Event:
        """Event that fires once the phase with this parity has completed
        (try_wait.parity semantics: phase k done <=> parity k & 1 flips)."""
        ev = self.env.event()
        if (self.phase & 1) != parity:
            ev.succeed()
        else:
            self._waiters.append((parity, ev))
        return ev


class BlockBarrier:
    """bar.sync over `parties` participants (warp roles modelled as processes)."""

    def __init__(self, env: simpy.Environment, parties: int, cost: float):
        self.env, self.parties, self.cost = env, parties, cost
        self._arrived: list[simpy.Event] = []

    def sync(self):
        ev = self.env.event()
        self._arrived.append(ev)
        if len(self._arrived) == self.parties:
            for e in self._arrived:
                e.succeed()
            self._arrived = []
        yield ev
        yield self.env.timeout(self.cost)


def wgmma_clk(gpu: GpuProfile, n: int, smem_write_bytes: float = 0.0) -> float:
    """Clocks one m64nNk16 occupies the SM's tensor cores: the math at 4096 FLOP/clk, or its
    operand reads from shared memory at WGMMA's measured rate (~100 B/clk), the larger: A
    (64x16) and B (Nx16), plus `smem_write_bytes`, the TMA writes this instruction's share of
    the K tile brought in (when the profile has TMA writes share the banks). Below N = 128 the
    reads bound it: n64 takes 41 clk for 32 of math, n16 26 for 8. fp16 accumulation runs at
    the same rate [datasheet]."""
    math_clk = 2 * WGMMA_M * n * WGMMA_K / gpu.tensor_flops_per_clk
    smem = (WGMMA_M + n) * WGMMA_K * INPUT_BYTES
    if gpu.tma_writes_share_smem:
        smem += smem_write_bytes
    return max(math_clk, smem / gpu.wgmma_smem_bytes_per_clk)


def multicast_port_share(gpu: GpuProfile, cluster: int) -> float:
    """The part of a box one SM's L2 -> SM port carries when the `cluster` CTAs that share it
    each load 1/cluster and multicast it: its own part, plus the profile's
    `multicast_receive_cost` of the parts the partners load (each SM's shared memory still
    takes in the whole box)."""
    own = 1.0 / cluster
    return own + (1.0 - own) * gpu.multicast_receive_cost


def box_clk(gpu: GpuProfile, nbytes: float, requests: float, port_share: float, miss_rate: float,
            active_sms: int | None, miss_charge: float, hbm_rate: float,
            hbm_share: float | None = None) -> tuple[float, float]:
    """(port, HBM) clocks of one TMA box on one SM while `active_sms` SMs pull: its requests and
    its bytes on the L2 -> SM port (GpuProfile.port_clk; a missed byte also costs `miss_charge` x
    its read time: the L2 fill competes with the reads), and its missed bytes at the SM's HBM
    share; `port_share` of the port's part and `hbm_share` (default the same) of the HBM's: a
    multicast box is read from L2 once per cluster, but each SM may pay more than its part on its
    port (multicast_port_share)."""
    hbm_share = port_share if hbm_share is None else hbm_share
    port_bytes = port_share * nbytes * (1.0 + miss_charge * miss_rate)
    port = gpu.port_clk(port_bytes, port_share * requests, active_sms)
    return port, hbm_share * nbytes * miss_rate / hbm_rate


def zero_fill_clk(gpu: GpuProfile, oob_rows: float) -> float:
    """Clocks the SM's TMA unit spends writing the zeros of a box's `oob_rows` rows outside the
    matrix into shared memory: nothing is read for them, but the fill is slower than a read
    (experiments.research.tma_oob_rows). It runs beside the other boxes' transfers, one box's
    fill after another's, and a box is complete when both its bytes and its fill are in."""
    return oob_rows * gpu.ns_to_clk(gpu.tma_oob_row_ns)


def tma_store_bytes_per_clk(gpu: GpuProfile) -> float:
    """The rate a TMA store reads a staged C tile out of shared memory into L2, bytes a clock."""
    return (gpu.tma_store_bytes_per_ns or gpu.l2_sm_bytes_per_ns or gpu.l2_sm_bytes_per_clk * gpu.clock_ghz) \
        / gpu.clock_ghz


def staging_passes_clk(s: Schedule, gpu: GpuProfile, share_bytes: float) -> float:
    """What staging C in passes (Schedule.c_staging_passes) adds to a warpgroup's epilogue: each
    later pass waits until the pass before's TMA store has read the staging tile, and syncs the
    warpgroup once more."""
    passes = s.c_staging_passes
    return (passes - 1) * (share_bytes / passes / tma_store_bytes_per_clk(gpu) + gpu.bar_sync_clk)


def staged_epilogue_clk(s: Schedule, gpu: GpuProfile, share_bytes: float) -> float:
    """A consumer warpgroup's staged (TMA-store) epilogue on its own path: its share into shared
    memory, its named barrier, a TMA issue a box, the profile's fixed clocks around them, and
    the waits between staging passes."""
    return (share_bytes / gpu.smem_bytes_per_clk + gpu.bar_sync_clk + s.c_store_boxes * gpu.tma_issue_clk
            + gpu.staged_epilogue_clk + staging_passes_clk(s, gpu, share_bytes))


def partial_tile_ns(s: Schedule, gpu: GpuProfile) -> tuple[float, float] | None:
    """A split unit's partial tile once its K loop is done, in ns, where the profile has it
    measured (experiments.research.split_k_phases): (the CTA's fp32 stores of the whole tile up
    to the fence that publishes them, its consumer warpgroups side by side; the handshake with
    the tile's other slices and the sum of this CTA's share, which reads the tile's fp32 bytes
    over all the slices). A masked edge tile issues the same stores, so the whole tile counts.
    None where the profile has no such measurement. Split-K inside a cluster (split_cluster):
    (the shares sent to the partners' shared memory, the tile's bytes but this CTA's own share;
    the round of barriers and the sum of its share from its own shared memory). With a lead
    (split_lead) the path is the first CTA's: nothing sent; the others' whole partials summed
    from its shared memory, once they have arrived (split_lead_wait_ns)."""
    tile = s.block_m * s.block_n * ACCUMULATOR_BYTES
    if s.split_cluster and s.split_lead:
        return 0.0, tile * (s.split_k - 1) / gpu.cluster_sum_bytes_per_ns
    if s.split_cluster:
        return (tile * (s.split_k - 1) / s.split_k / gpu.cluster_exchange_bytes_per_ns,
                gpu.cluster_exchange_sync_us * 1e3 + tile / gpu.cluster_sum_bytes_per_ns)
    if gpu.split_store_bytes_per_ns is None:
        return None
    return (tile / gpu.split_store_bytes_per_ns,
            gpu.split_sync_us * 1e3 + tile / gpu.split_sum_bytes_per_ns)


def split_lead_wait_ns(s: Schedule, gpu: GpuProfile, lead_ns: float) -> float:
    """What the first CTA of a split_cluster with a lead (split_lead) waits for after its loop:
    the other slices' sends of their whole fp32 partials and the round of barriers, less the
    `lead_ns` its lead's K tiles take (the others finish that much sooner). The loop itself is
    charged at the even share: a call bound by HBM ends when the HBM has moved its bytes,
    whichever SMs pull them (experiments.research.gpc_stream); a loop bound by each SM's own
    port would pay the lead's K tiles too, which this leaves out."""
    tile = s.block_m * s.block_n * ACCUMULATOR_BYTES
    return max(0.0, tile / gpu.cluster_exchange_bytes_per_ns + gpu.cluster_exchange_sync_us * 1e3 - lead_ns)


def split_unit_ns(s: Schedule, gpu: GpuProfile) -> tuple[float, float] | None:
    """partial_tile_ns of a split-K unit; None for a schedule without split-K (or a profile
    without the measurement)."""
    return partial_tile_ns(s, gpu) if s.split_k > 1 else None


class SmEngines:
    """The shared engines of one SM: tensor cores, the L2 -> SM port, the HBM share, TMA,
    and the store path to L2."""

    def __init__(self, env: simpy.Environment, gpu: GpuProfile, miss_rate: float,
                 active_sms: int | None = None):
        self.env, self.gpu, self.miss_rate = env, gpu, miss_rate
        # this SM's port, and its share of the L2, while `active_sms` SMs pull together
        self.active_sms = active_sms
        self.miss_charge = gpu.l2_miss_charge(active_sms)
        self.tensor = simpy.Resource(env, capacity=1)
        self.l2_path = simpy.Resource(env, capacity=1)
        self.hbm = simpy.Resource(env, capacity=1)
        self.stores = simpy.Resource(env, capacity=1)
        self.zero_fill = simpy.Resource(env, capacity=1)
        self.inflight = simpy.Container(env, capacity=gpu.tma_inflight_bytes, init=gpu.tma_inflight_bytes)
        self.busy = {"tensor": 0.0, "tma": 0.0, "hbm": 0.0, "store": 0.0}
        self.latency_clk = gpu.ns_to_clk(gpu.tma_latency_ns + miss_rate * (gpu.hbm_latency_ns - gpu.tma_latency_ns))
        # HBM is shared by the SMs that pull: fewer busy SMs each get more of it
        self.hbm_rate = gpu.hbm_bytes_per_clk_per_sm(active_sms)

    # ---- tensor cores ----
    def wgmma_clk(self, n: int, smem_write_bytes: float = 0.0) -> float:
        return wgmma_clk(self.gpu, n, smem_write_bytes)

    def wgmma_group(self, instructions: int, n: int, trace: Trace | None, role: str,
                    smem_write_bytes: float = 0.0) -> simpy.Event:
        """Issue a committed group; the returned event fires when its results are in registers.
        `smem_write_bytes`: TMA bytes written to shared memory per instruction (see wgmma_clk)."""
        done = self.env.event()
        self.env.process(self._run_group(instructions, n, done, trace, role, smem_write_bytes))
        return done

    def _run_group(self, instructions, n, done, trace, role, smem_write_bytes=0.0):
        # the group holds the tensor cores FIFO for its instructions plus the pipe's fill
        # (wgmma_fill_clk: from the group's first instruction reaching the tensor cores to
        # their first math clock; no other group's instruction runs in it); its results are
        # in registers `wgmma_tail(n)` after its last instruction leaves the tensor cores
        math_clk = instructions * self.wgmma_clk(n, smem_write_bytes)
        with self.tensor.request() as req:
            yield req
            t0 = self.env.now
            yield self.env.timeout(self.gpu.wgmma_fill_clk + math_clk)
            self.busy["tensor"] += math_clk
            if trace is not None:
                trace.span("tensor cores", f"WGMMA x{instructions} ({role})", "wgmma", t0, self.env.now)
        yield self.env.timeout(self.gpu.wgmma_tail(n))
        done.succeed()

    # ---- TMA ----
    def tma_load(self, nbytes: float, mbar: Mbarrier, trace: Trace | None, name: str,
                 requests: float | None = None, cluster: int = 1, oob_rows: float = 0.0) -> None:
        """Start a bulk tensor copy (the issuing thread pays `tma_issue_clk` itself).
        `requests`: L2 requests the box makes (one per box row of <= 128 B).
        `cluster`: the CTAs that share the box, each loading 1/cluster of it and multicasting
        it to the others (its port carries multicast_port_share of it, HBM its own part); its
        transaction bytes still complete in full on this CTA's barrier.
        `oob_rows`: the box's rows outside the matrix (zero_fill_clk)."""
        self.env.process(self._run_tma(nbytes, mbar, trace, name, requests or math.ceil(nbytes / 128), cluster,
                                       oob_rows))

    def _run_tma(self, nbytes, mbar, trace, name, requests, cluster=1, oob_rows=0.0):
        t0 = self.env.now
        held = min(nbytes, self.gpu.tma_inflight_bytes)
        yield self.inflight.get(held)
        fill = self.env.process(self._run_zero_fill(zero_fill_clk(self.gpu, oob_rows))) if oob_rows > 0 else None
        yield self.env.timeout(self.latency_clk)
        # the L2 -> SM transfer and, for the lines that miss, the SM's share of HBM run
        # side by side (line by line); the copy is done when the slower one is.
        # The port: the box's requests, then its bytes (a missed byte also costs
        # l2_miss_charge x its read time: the L2 fill competes with the reads)
        port_dt, hbm_dt = box_clk(self.gpu, nbytes, requests, multicast_port_share(self.gpu, cluster), self.miss_rate,
                                  self.active_sms, self.miss_charge, self.hbm_rate, hbm_share=1.0 / cluster)
        hreq = self.hbm.request()
        preq = self.l2_path.request()
        yield hreq & preq
        first = min(port_dt, hbm_dt)
        yield self.env.timeout(first)
        (self.hbm if hbm_dt <= port_dt else self.l2_path).release(hreq if hbm_dt <= port_dt else preq)
        yield self.env.timeout(max(port_dt, hbm_dt) - first)
        (self.l2_path if hbm_dt <= port_dt else self.hbm).release(preq if hbm_dt <= port_dt else hreq)
        self.busy["tma"] += port_dt
        self.busy["hbm"] += hbm_dt
        if fill is not None:
            yield fill
        yield self.inflight.put(held)
        if trace is not None:
            trace.span("TMA engine", name, "tma", t0, self.env.now)
        mbar.complete_tx(nbytes)

    def _run_zero_fill(self, clk):
        with self.zero_fill.request() as req:
            yield req
            yield self.env.timeout(clk)
            self.busy["zero_fill"] = self.busy.get("zero_fill", 0.0) + clk

    # ---- stores to L2 ----
    def store(self, nbytes: float, bytes_per_clk: float, trace: Trace | None, name: str) -> simpy.Event:
        """Write `nbytes` to L2 over the SM's store path (FIFO) at `bytes_per_clk`; the event
        fires when the last byte has left the SM."""
        done = self.env.event()
        self.env.process(self._run_store(nbytes, bytes_per_clk, done, trace, name))
        return done

    def _run_store(self, nbytes, rate, done, trace, name):
        with self.stores.request() as req:
            yield req
            t0 = self.env.now
            yield self.env.timeout(nbytes / rate)
            self.busy["store"] += nbytes / rate
            if trace is not None:
                trace.span("store path", name, "store", t0, self.env.now)
        done.succeed()
