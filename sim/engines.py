"""The engines of one SM, and what is shared across SMs.

Per SM (a SimPy environment, time in SM clocks):
  TensorCores  one queue for the SM's four tensor cores: a WGMMA group occupies them for
               its N-dependent time; commit / wait_group(n) semantics per warpgroup.
  TmaEngine    issue cost on the issuing thread, bytes in flight, latency, transfer over
               the SM's L2 path (its port, or its even share of the aggregate L2 read
               bandwidth when every SM pulls, the smaller) (and its HBM share for bytes that miss L2), completion
               signalled to an Mbarrier as transaction bytes.
  Mbarrier     phase, arrival count and transaction bytes; waits by parity.
  BlockBarrier bar.sync: every party must arrive; then it costs `bar_sync_clk`.
Across SMs (analytic, in `memory_traffic`): the bytes every CTA reads, and the part
that misses L2, from the tiles that the CTAs of one wave share (raster order).
Also here: occupancy (`residency`) and wave quantization (`waves`).
"""
from __future__ import annotations

import math

import numpy as np
import simpy

from gemm.schedule import INPUT_BYTES, WGMMA_K, WGMMA_M, Schedule, ctas_by_registers

from .hardware import GpuProfile


# ----------------------------------------------------------------------------------
# occupancy and waves
# ----------------------------------------------------------------------------------
def registers_per_thread(s: Schedule, gpu: GpuProfile) -> int:
    """Registers per thread at launch: accumulators + the kernel's other registers."""
    return min(gpu.max_regs_per_thread, s.accumulator_registers + gpu.reg_overhead)


def residency(s: Schedule, gpu: GpuProfile) -> dict:
    """CTAs per SM and what limits it: shared memory, registers, threads, the block cap."""
    smem = s.shared_bytes + gpu.smem_reserved_per_block
    regs = registers_per_thread(s, gpu)
    limits = {
        "smem": gpu.smem_per_sm // smem,
        "registers": ctas_by_registers(regs, s.threads, gpu.regs_per_sm, gpu.reg_alloc_unit),
        "threads": gpu.max_threads_per_sm // s.threads,
        "blocks": gpu.max_ctas_per_sm,
    }
    ctas = min(limits.values())
    return {"ctas_per_sm": ctas, "limited_by": min(limits, key=limits.get), "limits": limits,
            "registers_per_thread": regs, "smem_per_cta": smem}


def grid(s: Schedule, m: int, n: int) -> tuple[int, int]:
    return math.ceil(m / s.block_m), math.ceil(n / s.block_n)


def waves(n_ctas: int, sm_count: int, ctas_per_sm: int) -> dict:
    """Wave quantization: full waves of sm_count x ctas_per_sm CTAs, then a tail."""
    per_wave = sm_count * ctas_per_sm
    full, rest = divmod(n_ctas, per_wave)
    tail_per_sm = math.ceil(rest / sm_count) if rest else 0
    return {"ctas": n_ctas, "per_wave": per_wave, "full": full, "tail_ctas": rest,
            "tail_ctas_per_sm": tail_per_sm, "waves": full + (1 if rest else 0),
            "waves_exact": n_ctas / per_wave}


def tile_order(s: Schedule, tm: int, tn: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of each CTA in launch order."""
    ids = np.arange(tm * tn)
    if s.raster == "row":
        return ids // tn, ids % tn
    if s.raster == "column":
        return ids % tm, ids // tm
    g = s.raster_group  # grouped: G tile rows at a time, column-major inside the group
    group = ids // (g * tn)
    first = group * g
    size = np.minimum(g, tm - first)
    local = ids % (g * tn)
    return first + local % size, local // size


def memory_traffic(s: Schedule, m: int, n: int, k: int, per_wave: int) -> dict:
    """Bytes over the L2->SM path and from HBM.

    Every CTA reads its A panel (block_m x K) and B panel (block_n x K): in all
    2*M*N*K*(1/block_n + 1/block_m) bytes (fp16), carried L2 -> SM. HBM carries a
    panel once per wave that uses it (the CTAs of a wave run their K loops side by
    side, so a K slice fetched by one is an L2 hit for the others), plus C.
    Assumes a wave's moving K window fits in L2 (it does at these sizes: rows x 128 x
    a few K tiles, well under 50 MB)."""
    tm, tn = grid(s, m, n)
    rows, cols = tile_order(s, tm, tn)
    a_panel = min(s.block_m, m) * k * INPUT_BYTES
    b_panel = min(s.block_n, n) * k * INPUT_BYTES
    l2_bytes = tm * tn * (a_panel + b_panel)
    hbm = 0
    for start in range(0, tm * tn, per_wave):
        hbm += len(np.unique(rows[start:start + per_wave])) * a_panel
        hbm += len(np.unique(cols[start:start + per_wave])) * b_panel
    c_bytes = m * n * INPUT_BYTES
    return {"l2_to_sm_bytes": int(l2_bytes), "hbm_read_bytes": int(hbm),
            "hbm_write_bytes": int(c_bytes), "hbm_bytes": int(hbm + c_bytes),
            "l2_hit_rate": 1.0 - hbm / l2_bytes, "a_panel_bytes": a_panel, "b_panel_bytes": b_panel}


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


class SmEngines:
    """The shared engines of one SM: tensor cores, the L2 path, the HBM share, TMA."""

    def __init__(self, env: simpy.Environment, gpu: GpuProfile, miss_rate: float,
                 active_sms: int | None = None):
        self.env, self.gpu, self.miss_rate = env, gpu, miss_rate
        # this SM's share of the L2 read bandwidth while `active_sms` SMs pull together
        self.l2_rate = gpu.l2_share_bytes_per_clk(active_sms)
        self.miss_charge = gpu.l2_miss_charge(active_sms)
        self.tensor = simpy.Resource(env, capacity=1)
        self.l2_path = simpy.Resource(env, capacity=1)
        self.hbm = simpy.Resource(env, capacity=1)
        self.inflight = simpy.Container(env, capacity=gpu.tma_inflight_bytes, init=gpu.tma_inflight_bytes)
        self.busy = {"tensor": 0.0, "tma": 0.0, "hbm": 0.0}
        self.latency_clk = gpu.ns_to_clk(gpu.tma_latency_ns + miss_rate * (gpu.hbm_latency_ns - gpu.tma_latency_ns))
        self.hbm_rate = gpu.hbm_bytes_per_clk_per_sm()

    # ---- tensor cores ----
    def wgmma_clk(self, n: int, smem_write_bytes: float = 0.0) -> float:
        """Clocks one m64nNk16 occupies the SM's tensor cores: the math at 4096 FLOP/clk,
        or the shared-memory traffic at 128 B/clk, the larger: its reads of A (64x16) and
        B (Nx16), plus `smem_write_bytes`, the TMA writes this instruction's share of the
        K tile brought in (when the profile has TMA writes share the banks)."""
        math_clk = 2 * WGMMA_M * n * WGMMA_K / self.gpu.tensor_flops_per_clk
        smem = (WGMMA_M + n) * WGMMA_K * INPUT_BYTES
        if self.gpu.tma_writes_share_smem:
            smem += smem_write_bytes
        return max(math_clk, smem / self.gpu.smem_bytes_per_clk)

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
    def tma_load(self, nbytes: int, mbar: Mbarrier, trace: Trace | None, name: str,
                 requests: int | None = None) -> None:
        """Start a bulk tensor copy (the issuing thread pays `tma_issue_clk` itself).
        `requests`: L2 requests the box makes (one per box row of <= 128 B)."""
        self.env.process(self._run_tma(nbytes, mbar, trace, name, requests or math.ceil(nbytes / 128)))

    def _run_tma(self, nbytes, mbar, trace, name, requests):
        t0 = self.env.now
        yield self.inflight.get(nbytes)
        yield self.env.timeout(self.latency_clk)
        # the L2 -> SM transfer and, for the lines that miss, the SM's share of HBM run
        # side by side (line by line); the copy is done when the slower one is
        # the SM's L2 path: its byte rate, or one request per l2_request_clk, the slower
        # (a missed byte also costs up to l2_miss_port_factor x its read time: the L2 fill)
        port_bytes = nbytes * (1.0 + self.miss_charge * self.miss_rate)
        if self.gpu.l2_request_additive:
            port_dt = port_bytes / self.l2_rate + requests * self.gpu.l2_request_clk
        else:
            port_dt = max(port_bytes / self.l2_rate, requests * self.gpu.l2_request_clk)
        hbm_dt = nbytes * self.miss_rate / self.hbm_rate
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
        yield self.inflight.put(nbytes)
        if trace is not None:
            trace.span("TMA engine", name, "tma", t0, self.env.now)
        mbar.complete_tx(nbytes)
