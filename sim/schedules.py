"""How a Schedule drives the engines of one SM: one SimPy process per warp role.

  serial (V1)       one warpgroup does everything: load, wait, sync, MMA, wait, sync.
  ring (V2)         prefill `stages` loads; then wait / sync / MMA / wait_group(0) /
                    preload / sync, with the stage index computed at run time.
  specialized (V3+) a producer warp and `consumer_warpgroups` consumers talk through
                    full / empty mbarriers; no block-wide sync unless asked for;
                    `wgmma_in_flight` groups stay in flight (V5), tile size and the
                    epilogue are settings (V6).
Every knob of the Schedule is read here; nothing is special-cased by preset name.
"""
from __future__ import annotations

import dataclasses
import math

import simpy

from gemm.schedule import INPUT_BYTES, WGMMA_K, Schedule

from .engines import BlockBarrier, Mbarrier, SmEngines, Trace
from .hardware import GpuProfile


def model_schedule(base: Schedule, **overrides) -> tuple[Schedule, list[str]]:
    """`base` with fields changed, validated by gemm.schedule.

    One model-only case is let through with a note: a serial/ring schedule with
    `syncs_per_iter=0` (the issue's "what would V2 do without its block-wide syncs").
    gemm.schedule refuses it for a kernel because there one thread waits on the
    mbarrier and the sync publishes the arrival; the model lets every thread wait on
    the mbarrier itself, which is what such a kernel would have to do."""
    notes: list[str] = []
    s = dataclasses.replace(base, **overrides)
    if s.family in ("serial", "ring") and s.syncs_per_iter == 0:
        dataclasses.replace(s, syncs_per_iter=1).validated()  # everything else must hold
        notes.append("model-only schedule: a serial/ring kernel with no block-wide sync "
                     "(every thread waits on the mbarrier itself); gemm.schedule refuses it "
                     "for a real kernel")
        return s, notes
    return s.validated(), notes


class Cta:
    """One CTA on one SM: its barriers, its warp-role processes, its timeline."""

    def __init__(self, env: simpy.Environment, eng: SmEngines, s: Schedule, gpu: GpuProfile,
                 k_iters: int, trace: Trace | None, start: float = 0.0, loads: bool = True,
                 mmas: bool = True):
        self.env, self.eng, self.s, self.gpu = env, eng, s, gpu
        # loads=False (model only): the ring is filled once and then reused, no further TMA
        # loads nor waits for them -- the load-free loop of gemm/kernels/ring.py, mma_loop_only
        self.loads = loads
        # mmas=False (model only): no WGMMAs and no wait_group -- the loop of
        # gemm/kernels/ring.py, load_loop_only (prefill; wait, sync, refill, sync)
        self.mmas = mmas
        self.k_iters, self.trace, self.start = k_iters, trace, start
        self.a_bytes = s.block_m * s.block_k * INPUT_BYTES
        self.b_bytes = s.block_n * s.block_k * INPUT_BYTES
        self.iter_end: list[float] = []     # when consumer 0 finished each K iteration
        self.end: float | None = None
        self.full = [Mbarrier(env, 1) for _ in range(s.stages)]
        self.empty = [Mbarrier(env, s.consumer_warpgroups) for _ in range(s.stages)]
        self.k_steps = s.block_k // WGMMA_K
        # L2 requests of one K tile's boxes: one per row of <= 128 B (K-major, 128-B swizzle)
        per_row = math.ceil(s.block_k * INPUT_BYTES / 128)
        self.a_requests, self.b_requests = s.block_m * per_row, s.block_n * per_row
        # the runtime stage index per K iteration: ALU ops, plus an L1 round trip when the
        # per-stage phases live in a local-memory array (phase_storage="local")
        self.index_clk = gpu.runtime_index_clk + (gpu.phase_local_clk if s.phase_storage == "local" else 0)
        # TMA bytes written to shared memory per WGMMA instruction of the K tile
        self.smem_write_per_instr = s.k_iteration_bytes / (self.k_steps * s.m_tiles_per_warpgroup
                                                            * s.consumer_warpgroups)

    # ---- small timed steps, recorded when tracing ----
    def _step(self, role, name, cat, clk):
        t0 = self.env.now
        yield self.env.timeout(clk)
        if self.trace is not None:
            self.trace.span(role, name, cat, t0, self.env.now)

    def _wait(self, role, name, cat, event):
        t0 = self.env.now
        yield event
        if self.trace is not None:
            self.trace.span(role, name, cat, t0, self.env.now)

    def _stage_index(self, role):
        """V2's runtime stage index (iter % stages, phase lookup); folds away with one stage."""
        if self.s.runtime_stage_index and self.s.stages > 1:
            yield from self._step(role, "stage index (runtime)", "index", self.index_clk)

    def _wait_stage(self, role, name, cat, barrier, phase):
        """Wait on a stage's mbarrier (full or empty), then the try_wait that sees it."""
        yield from self._wait(role, name, cat, barrier.wait(phase))
        yield from self._step(role, "mbarrier try_wait", cat, self.gpu.mbarrier_wait_clk)

    def _sync(self, role, bar: BlockBarrier, name="bar.sync"):
        t0 = self.env.now
        yield from bar.sync()
        if self.trace is not None:
            self.trace.span(role, name, "sync", t0, self.env.now)

    def _issue_load(self, role, it):
        """One elected thread: arrive.expect_tx, then the A and B tensor copies."""
        g, st = self.gpu, it % self.s.stages
        yield from self._step(role, f"TMA issue k={it}", "tma_issue",
                              g.mbarrier_arrive_clk + 2 * g.tma_issue_clk)
        self.full[st].arrive(expect_tx=self.a_bytes + self.b_bytes)
        self.eng.tma_load(self.a_bytes, self.full[st], self.trace, f"A k={it}", self.a_requests)
        self.eng.tma_load(self.b_bytes, self.full[st], self.trace, f"B k={it}", self.b_requests)

    def _mma(self, role, it, instructions):
        g = self.gpu
        # wgmma.fence, the first instruction and commit_group are on the warp's path; the
        # later instructions issue (wgmma_issue_clk each) while earlier ones execute
        # (>= 32 clk each), so they add nothing
        yield from self._step(role, f"WGMMA issue k={it}", "issue",
                              g.wgmma_fence_commit_clk + g.wgmma_issue_clk)
        return self.eng.wgmma_group(instructions, self.s.wgmma_n, self.trace, role, self.smem_write_per_instr)

    def _epilogue(self, role):
        s, g = self.s, self.gpu
        tile = s.rows_per_warpgroup * s.block_n * INPUT_BYTES
        if s.epilogue == "tma":   # registers -> shared -> one TMA store, wait for its reads
            clk = (tile / g.smem_bytes_per_clk + g.bar_sync_clk + g.tma_issue_clk
                   + tile / self.eng.l2_rate)
        else:                     # registers -> global in the accumulator fragment layout
            clk = tile / g.store_bytes_per_clk
        yield from self._step(role, "epilogue", "epilogue", clk)

    # ---- the kernels ----
    def run(self):
        yield self.env.timeout(self.start)
        yield from self._step("warpgroup 0" if self.s.family != "specialized" else "consumer 0",
                              "CTA launch", "launch", self.gpu.cta_launch_clk)
        if self.s.family == "specialized":
            bar = BlockBarrier(self.env, 1 + self.s.consumer_warpgroups, self.gpu.bar_sync_clk)
            procs = [self.env.process(self._producer(bar))]
            procs += [self.env.process(self._consumer(w, bar)) for w in range(self.s.consumer_warpgroups)]
            yield simpy.AllOf(self.env, procs)
        else:
            yield from self._single_warpgroup()
        self.end = self.env.now

    def _single_warpgroup(self):
        """serial (V1) and ring (V2): the same 128 threads load, wait, sync and compute."""
        s, g, role = self.s, self.gpu, "warpgroup 0"
        bar = BlockBarrier(self.env, 1, g.bar_sync_clk)
        serial = s.family == "serial"
        phase = [0] * s.stages
        instructions = self.k_steps * s.m_tiles_per_warpgroup
        if not serial:
            for it in range(min(s.stages, self.k_iters)):
                yield from self._issue_load(role, it)
        for it in range(self.k_iters):
            st = it % s.stages
            load = self.loads or it < s.stages   # loads=False: only the first fill of the ring
            if serial and load:
                yield from self._issue_load(role, it)
            yield from self._stage_index(role)
            if load:
                # one thread waits on the mbarrier; the rest are already at the sync
                name = "bar.sync (waiting for TMA)" if s.syncs_per_iter else "mbarrier wait (TMA)"
                yield from self._wait(role, name, "tma_wait", self.full[st].wait(phase[st]))
                yield from self._step(role, "mbarrier try_wait", "tma_wait", g.mbarrier_wait_clk)
            if s.syncs_per_iter >= 1:
                yield from self._sync(role, bar)
            if self.mmas:
                done = yield from self._mma(role, it, instructions)
                yield from self._wait(role, "wait_group(0)", "wgmma_wait", done)
                yield from self._step(role, "wait_group(0)", "wgmma_wait", g.wgmma_wait_clk)
            phase[st] ^= 1
            if not serial and self.loads and it + s.stages < self.k_iters:
                yield from self._issue_load(role, it + s.stages)
            for _ in range(max(0, s.syncs_per_iter - 1)):
                yield from self._sync(role, bar)
            self.iter_end.append(self.env.now)
        yield from self._epilogue(role)

    def _producer(self, bar):
        s, role = self.s, "producer warp"
        phase = 1  # the producer starts on phase 1: every stage is free
        # loads=False (model only): the ring is filled once (the kernel's mma_loop_only mode)
        for it in range(self.k_iters if self.loads else min(self.k_iters, s.stages)):
            st = it % s.stages
            yield from self._stage_index(role)
            yield from self._wait_stage(role, "wait empty", "empty_wait", self.empty[st], phase)
            yield from self._issue_load(role, it)
            for _ in range(s.syncs_per_iter):
                yield from self._sync(role, bar)
            if st == s.stages - 1:
                phase ^= 1

    def _consumer(self, w, bar):
        s, role = self.s, f"consumer {w}"
        phase = 0
        instructions = self.k_steps * s.m_tiles_per_warpgroup
        in_flight: list[tuple[int, simpy.Event]] = []   # (stage, done) of committed groups
        for it in range(self.k_iters):
            st = it % s.stages
            yield from self._stage_index(role)
            if self.loads or it < s.stages:
                yield from self._wait_stage(role, "wait full (TMA)", "tma_wait", self.full[st], phase)
            for _ in range(s.syncs_per_iter):
                yield from self._sync(role, bar)
            if not self.mmas:   # the kernel's load_loop_only mode: hand the stage straight back
                yield from self._step(role, "arrive empty", "release", self.gpu.mbarrier_arrive_clk)
                self.empty[st].arrive()
            else:
                done = yield from self._mma(role, it, instructions)
                in_flight.append((st, done))
                yield from self._retire(role, in_flight, s.wgmma_in_flight if self.loads else 0,
                                        release=self.loads)
            if st == s.stages - 1:
                phase ^= 1
            if w == 0:
                self.iter_end.append(self.env.now)
        yield from self._retire(role, in_flight, 0)
        yield from self._epilogue(role)

    def _retire(self, role, in_flight, keep, release=True):
        """wgmma.wait_group(keep), then release the stages whose groups are done (with
        release=False, the mma_loop_only mode, nothing is handed back)."""
        g = self.gpu
        if len(in_flight) > keep:
            yield from self._wait(role, f"wait_group({keep})", "wgmma_wait", in_flight[-keep - 1][1])
            yield from self._step(role, f"wait_group({keep})", "wgmma_wait", g.wgmma_wait_clk)
        while len(in_flight) > keep:
            st, _ = in_flight.pop(0)
            if release:
                yield from self._step(role, "arrive empty", "release", g.mbarrier_arrive_clk)
                self.empty[st].arrive()


def simulate_sm(s: Schedule, gpu: GpuProfile, ctas: int, k_iters: int, miss_rate: float,
                trace: bool = False, sim_iters: int = 48, active_sms: int | None = None,
                loads: bool = True, mmas: bool = True) -> dict:
    """One SM running `ctas` resident CTAs side by side (one wave on that SM).

    `loads=False` (serial/ring only, model only): after the ring's first fill no more TMA
    loads and no waits for them; the syncs, WGMMAs and wait_group(0) stay (ring.py, mma_loop_only).

    Only `sim_iters` K iterations are simulated; when K is longer the steady-state
    rate of the second half is extrapolated to the remaining iterations."""
    env = simpy.Environment()
    eng = SmEngines(env, gpu, miss_rate, active_sms)
    n_sim = min(k_iters, sim_iters)
    tr = Trace() if trace else None
    # CTAs of a wave are started one after another by the block scheduler
    if not loads and not mmas:
        raise ValueError("loads=False and mmas=False together leave no loop")
    run = [Cta(env, eng, s, gpu, n_sim, tr if i == 0 else None, start=i * gpu.bar_sync_clk, loads=loads,
               mmas=mmas)
           for i in range(ctas)]
    for c in run:
        env.process(c.run())
    env.run()
    sim_end = max(c.end for c in run)
    extra = k_iters - n_sim
    per_iter = 0.0
    if extra > 0:
        half = n_sim // 2
        per_iter = sum((c.iter_end[-1] - c.iter_end[half - 1]) / (n_sim - half) for c in run) / len(run)
    total = sim_end + extra * per_iter
    return {"clk": total, "sim_clk": sim_end, "per_iter_clk": per_iter, "simulated_iters": n_sim,
            "busy": dict(eng.busy), "trace": tr, "cta0_clk": run[0].end,
            "tma_latency_clk": eng.latency_clk, "l2_rate": eng.l2_rate}
