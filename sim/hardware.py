"""GPU profiles for the pipeline model: every parameter with where it comes from.

Units: SM clocks ("clk") for what happens inside an SM, nanoseconds for the memory
system (it does not run on the SM clock), bytes, TB/s = 1e12 B/s.

Each value is marked
  [datasheet]  NVIDIA datasheet / whitepaper / CUDA programming guide,
  [measured]   read on the lent H200 (shared/device/NOTES.md),
  [paper]      order of magnitude from published microbenchmarks (Luo et al. 2024,
               "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture";
               Luo et al. 2025, "Dissecting the NVIDIA Hopper Architecture through
               Microbenchmarking and Multiple Level Analysis"), not re-checked here,
  [assumed]    no measurement yet: a best guess, listed in sim/README.md so that the
               calibration (experiments/calibrate -> sim/profiles/<gpu>.json) replaces it.

`load_profile(name)` returns the built-in profile with any keys of
sim/profiles/<name>.json laid over it (a missing file is fine; an unknown key is an error).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

PROFILES_DIR = Path(__file__).with_name("profiles")


@dataclass(frozen=True)
class GpuProfile:
    name: str
    # ---- SMs and clocks ----
    sm_count: int
    clock_max_ghz: float        # max boost clock
    clock_peak_ghz: float       # the clock the datasheet's dense peak is quoted at
    clock_ghz: float            # the clock a compute-bound GEMM actually runs at (model clock)
    # ---- per-SM resources (Hopper, cc 9.0) ----
    smem_per_sm: int = 228 * 1024            # [datasheet] CUDA guide, cc 9.0
    smem_per_block: int = 227 * 1024         # [datasheet] opt-in maximum per block
    smem_reserved_per_block: int = 1024      # [datasheet] 1 KB system use per block
    regs_per_sm: int = 65536                 # [datasheet]
    max_regs_per_thread: int = 255           # [datasheet]
    reg_alloc_unit: int = 256                # [datasheet] registers allocated per warp in units of 256 (occupancy calculator)
    max_threads_per_sm: int = 2048           # [datasheet]
    max_ctas_per_sm: int = 32                # [datasheet]
    # registers a GEMM thread holds besides its fp32 accumulators (addresses, descriptors,
    # loop state, epilogue). [measured] 26: the project's V1 and V2 Numba builds (128x128x64,
    # 128 accumulators/thread) use 154 registers/thread on the H200, 3 CTAs/SM by the CUDA
    # occupancy API. Taken as the same for the specialized family (not built yet).
    reg_overhead: int = 26
    # ---- tensor cores ----
    tensor_flops_per_clk: int = 4096         # [datasheet] dense fp16/bf16, 4 tensor cores x 512 FMA/clk
    # shared-memory bandwidth that feeds WGMMA's A and B operands (SS mode):
    smem_bytes_per_clk: int = 128            # [datasheet] 32 banks x 4 B per clock
    # Do TMA's writes into shared memory take the same 128 B/clk that WGMMA reads its A and B
    # operands from? Was [assumed] True (one set of 32 banks), which capped a 128x128x64 K tile
    # at 512 clk of math / (48 KB reads + 32 KB writes at 128 B/clk = 640 clk) = 80% of the
    # tensor peak per clock. [measured] refuted: in-kernel clocks (experiments/results/h200-sxm/
    # clock.csv) put V2 128x128x64 s3 at 89.5% and s2 at 87.0% of 4096 FLOP per SM per clock.
    # Now False: the writes do not slow WGMMA's operand reads (where they go is not modelled).
    # Held in: the clock.csv rows "v2 128x128x64 s2" and "v2 128x128x64 s3".
    tma_writes_share_smem: bool = False
    # ---- WGMMA: calibrated on the load-free loop (gemm/kernels/ring.py, mma_loop_only, experiments/
    # results/h200-sxm/mma_loop.csv: bar.sync, fence, the K tile's WGMMAs, commit,
    # wait_group(0), bar.sync, no loads; SM clock read in the kernel). Per SM clock, 128x128x64:
    # 3 CTAs/SM 91.56%, 2 CTAs/SM 86.35%, 1 CTA/SM 71.56%; 128x192x64 (2) 90.33%; 64x128x64 (4)
    # 91.16%. Model: `predict(.., loads=False)` at each row's clock. Two free parameters,
    # set from the 3- and 1-CTA 128x128x64 rows (the other three held out; sim/README.md):
    #   wgmma_fill_clk: held on the tensor cores per group, nothing overlaps it -> the 3-CTA
    #     row (3 CTAs would otherwise keep the cores ~95% busy);
    #   wgmma_tail_clk: exposed per group on the issuing warpgroup -> the 1-CTA row, given the
    #     other exposed costs (index 16, 2 x bar.sync 24, fence+commit+first issue 24,
    #     wait 16: all [assumed]/[paper], kept). Only their sum is pinned: a smaller
    #     bar_sync_clk would give a larger tail one for one (twice per iteration).
    wgmma_issue_clk: int = 8                 # [assumed] per wgmma.mma_async; only the group's first is on the warp's path
    wgmma_fence_commit_clk: int = 16         # [assumed] wgmma.fence + commit_group per group
    # result latency of a WGMMA group after its last instruction leaves the tensor cores, by N.
    # [measured] 30 clk at N=128 (was an assumed 128: the 1-CTA loop then ran at 60% per clock,
    # measured 71.6%); the N shape 3:4:6 is kept [assumed]. With the fill, one m64n128k16 alone
    # takes 23 + 64 + 30 = 117 clk (Luo et al. 2025 [paper]: order of 100-200 clk).
    wgmma_tail_clk: dict = field(default_factory=lambda: {64: 22, 128: 30, 256: 45})
    wgmma_wait_clk: int = 16                 # [assumed] wgmma.wait_group returning once done
    # [measured] 23 clk per WGMMA group of tensor-core time that does no math (pipe fill
    # after a switch to a new group; was 0): from the 3-CTA row above
    wgmma_fill_clk: int = 23
    # ---- TMA (cp.async.bulk.tensor) ----
    tma_issue_clk: int = 40                  # [assumed] one elected thread, per tensor copy
    # round trip of a TMA box that hits L2, before its bytes stream in; the transfer at
    # the SM's L2 share and the FIFO wait behind the SM's other boxes are modelled on
    # top. [measured] 250 ns (was an assumed 500): V1 128x192x16 on the H200 (2 CTAs/SM,
    # latency-bound) takes 773-795 ns per K iteration per CTA (two sweeps) at the sampled
    # 1.92-1.965 GHz, of
    # which 320 box rows x 2 clk = 326 ns is the transfer and ~500 clk (~255 ns) the
    # WGMMAs, their tail, the syncs and issue: ~190 ns + the HBM-miss share remain.
    # Held in: the V1 128x192 rows (block_k 16, 32, 64); sensitivity in sim/README.md.
    tma_latency_ns: float = 250.0
    # the same for a box with lines that miss L2 and come from HBM. [assumed] loaded. Run 60
    # (experiments/tma_latency.py, tma_latency.csv) measured a lone 16 KB box on every SM at
    # 652 ns missing against 360 hitting (2.15 TB/s of misses), 1294 / 856 at two in flight per
    # SM, 1.9-4.7 us at four to eight (DRAM queueing); not adopted: hbm_latency_ns -
    # tma_latency_ns (550 ns) is also sim/convoy.py's threshold, and the light-load 290 ns would
    # call five GEMMs that keep their reuse free-running (experiments/NOTES.md 75).
    hbm_latency_ns: float = 800.0
    tma_inflight_bytes: int = 256 * 1024     # [assumed] per-SM bytes in flight the TMA unit tracks
    # ---- memory system ----
    # (Sixth pass: the three per-SM-clock L2 figures below are the fallback only; the
    # nanosecond figures further down, when set -- they are in the built-in profiles --
    # replace them at the profile's clock.)
    # L2 -> SM path: bytes per SM clock one SM can receive. [assumed] 64 B/clk (one 128-B
    # line per two clocks). Contradicted by 6% by one in-kernel-clock row: "v2 64x256x64 s2"
    # (clock.csv) moves 21.5 GB in 1.904 ms at 1.256 GHz = 68 B per SM clock. Not changed
    # (the request rate below and tma_latency_ns were derived with it); a known miss.
    l2_sm_bytes_per_clk: float = 64.0
    # ... and at most one L2 request per `l2_request_clk` SM clocks, whatever its length:
    # TMA asks L2 for each row of a box (block_k x 2 bytes: 32, 64 or 128 B) as one request.
    # [measured] 2 clk: the block_k=16 rows of experiments/results/h200-sxm/measured.csv
    # (32-B rows; V1 and V2 alike) move one box row per 2.0-2.2 clocks per SM at the clock
    # nvidia-smi sampled after each run (1.8-1.98 GHz), whatever the tile, stages or CTAs/SM;
    # it is the same "one 128-B line per two clocks" as the 64 B/clk above, for short rows.
    l2_request_clk: float = 2.0
    # Aggregate L2 read bandwidth, bytes per SM clock for the whole GPU. Was [assumed] 5120
    # (the A100 whitepaper's "5120 bytes/clk"), which capped a 128x128 tile at ~61% of the
    # tensor peak. [measured] refuted by the H200 sweep (experiments/results/h200-sxm/
    # measured.csv, two sweeps): 64x256x64 V2 (2 stages) moves 21.5 GB L2->SM in 1.79-1.87 ms
    # = 11.5-12.0 TB/s and 64x128x64 V1 25.8 GB in 2.31-2.39 ms = 10.8-11.2 TB/s: >= 5800 B/clk even at the
    # 1.98 GHz maximum clock. Now the ports' sum (132 x 64 = 8448 B/clk): no aggregate
    # limit beyond the per-SM ports (and their request rate, l2_request_clk).
    l2_read_bytes_per_clk: float = 8448.0
    # ---- the same L2 -> SM path in nanoseconds (sixth pass) ----
    # When set, these replace the per-SM-clock figures above (`__post_init__` derives
    # l2_sm_bytes_per_clk, l2_request_clk and l2_read_bytes_per_clk from them at this
    # profile's clock_ghz): the L2 and the crossbar are taken to run on their own clock,
    # not the SM clock, so a power-capped SM clock does not slow them. None = the per-clock
    # figures above stand (built-in profiles: see below for the calibrated values).
    # [measured] calibrated on the load-only loop (gemm/kernels/ring.py, load_loop_only; experiments/
    # results/h200-sxm/load_loop.csv: the V2 loop without WGMMAs, every row at 1.97-1.98 GHz,
    # so nothing in it is power-capped), `predict(.., mmas=False, ctas_per_sm=..)` at each
    # row's clock and residency (sim/README.md, sixth pass). A box costs its port
    #   requests x l2_request_ns + bytes x (1 + l2_miss_port_factor x miss rate) / l2_sm_bytes_per_ns
    # (l2_request_additive True). Held in: 128x128x64 s2 (3 CTAs/SM, 1.877 ms), s4 (1 CTA/SM,
    # 2.065 ms) and 128x128x16 s2 (12 CTAs/SM, 32-B box rows: 256 requests per 582.2 clk per
    # SM at 1.98 GHz); the three parameters from a grid (130-180 B/ns x 0.8-1.2 x 0.86-0.94 ns)
    # minimising the largest of the three errors (+0.5%, -0.4%, -0.5%). Held out: s1 (6
    # CTAs/SM) +3.3%, s3 (2) -3.1%, 128x192x64 s2 +4.4%, 64x128x64 s2 +5.9%.
    # A 128-B row of hits: 0.9 + 128/160 = 1.70 ns (75 B/ns per SM, 9.9 TB/s for 132 SMs);
    # a 32-B row 1.10 ns; a 64-B row 1.30 ns. Was 64 B/clk and one request per 2 clk, the
    # slower of the two (127 B/ns and 1.0 ns at 1.98 GHz): the load loops then ran 39-46%
    # too fast. The sum (not the max) was chosen after seeing that the max form leaves the
    # 64-B-row (block_k=32) GEMMs +14..+18% (clock.csv V2 128x128x32 +14.4%; with the sum -5.2%).
    # Known contradiction: the V2 64x256x64 s2 GEMM moves 11.3-12.0 TB/s (clock.csv,
    # measured.csv) with the same 128-B box rows (320 per K tile, as 128x192x64): above this
    # port; the model gives it -20%.
    # The [assumed] H100 values: the same (same GH100 die and L2).
    l2_sm_bytes_per_ns: float | None = 160.0  # one SM's L2 -> SM stream rate, bytes per ns (= GB/s)
    l2_request_ns: float | None = 0.9         # ns per L2 request (one per box row) on one SM's port
    l2_read_tbs: float | None = None          # aggregate L2 -> SM TB/s; None = the ports' sum
    # How a box's requests and bytes combine on the port: False = the slower of the two
    # (requests x l2_request_clk, or bytes / rate: the fifth pass), True = their sum (a fixed
    # cost per request, then the bytes stream).
    l2_request_additive: bool = True
    # L2 port time a byte that misses L2 costs on top of its read (the fill from HBM into
    # L2 competes with the reads), as a multiple of a hit byte's. 0 = misses cost the port
    # nothing extra (their HBM share runs side by side). [measured] 0.4, fitted on the same
    # three load-only loops as the two above, at each row's clock and residency, with the HBM
    # bytes predict() itself gives them (sim/convoy.py: free-running, 1.4 and 4.5 GB where run
    # 19 measured 2.7 and 5.8; the 1-CTA s4 7.8 where it kept its 4.4): minimax over the three
    # (0.2-0.5 tie at 2.2%, the binding row the 1-CTA loop, HBM-bound), ties broken by their rms
    # (`python -m experiments.fit_port --model-misses`; experiments/NOTES.md 77). It was 1.1
    # while predict counted each panel once per wave: 2.7-3.7x too few misses for these loops,
    # a charge per miss inflated to match. Charged in full with every SM busy and in
    # proportion to the busy SMs otherwise (thirteenth pass: a CTA's cycles follow the
    # GPU-wide miss share, and on 12-88 busy SMs the load-only loop pulls the hit-only rate
    # with 9-29% of its bytes missing; experiments/NOTES.md 33, 46, 47). The mechanism is
    # [assumed].
    l2_miss_port_factor: float = 0.4
    # ---- the GPU-wide timeline (sim/timeline.py; eleventh pass) ----
    # The same port cost of a missed byte, but counted on the misses the timeline itself
    # makes (l2_miss_port_factor above is fitted on sim/convoy.py's misses; it was 1.1 on the
    # per-wave estimate, 2.7-3.7x below the load loops' real misses). [measured] 0.5: the value in
    # 0.3..0.8 (steps of 0.1) whose largest error on the four 128x128x64 load-only loops
    # (load_loop.csv: s1..s4 at 6/3/2/1 CTAs/SM, 1.785/1.877/1.989/2.065 ms) is smallest, with
    # the LRU of l2_lru_bytes: +1.9/+2.0/-1.3/-0.7% (0.4: max 5.7%, 0.6: max 7.1%; the same
    # choice with 50 MB). Only those loops' times are used
    # (`python -m experiments.timeline_bytes --calibrate`).
    timeline_miss_port_factor: float = 0.5
    # How the durations of CTAs that nothing holds together spread, for sim/convoy.py's replay
    # of a free-running grid: a few SMs run them faster, for the whole launch, and each CTA
    # varies on its own besides. [measured] run 57 (logs/run57, NVIDIA H200, driver
    # 580.159.04): the rings V2, V2-local and V3 s3 in a grouped raster, where they keep their
    # L2 reuse (so the spread is not an effect of lost reuse), three launches each, median over
    # the nine: 12 SMs (six TPC pairs) whose CTAs take 0.816 x the other SMs' (0.78-0.88; the
    # other 120 within 1-2% of one another; the same SMs in every launch), and per CTA, with
    # the SM's factor and the slowdown all SMs share (running mean over 32 CTAs in start
    # order) divided out, a CV of 3.35% (3.1-3.5%). Held kernels show no fast SMs and ~1%
    # (`python -m experiments.drift --free-cv`; experiments/NOTES.md 76). Which SM ids are
    # fast does not move the replayed bytes (their number does), so the profile keeps the
    # count; the H100 profile assumes the H200's (the same 132-SM GH100 configuration).
    free_running_fast_sms: int = 12
    free_running_fast_sm_factor: float = 0.816
    free_running_cta_cv: float = 0.0335
    # Relative time one SM's L2 -> SM feed takes for the same bytes, per SM id (mean 1): the
    # L2 feed is not the same on every SM. [measured] sim/profiles/<gpu>.json, written by
    # `python -m experiments.sm_feed_map` from the per-CTA stamps of three load-only loops
    # (run 23); None = every SM alike.
    l2_feed_by_sm: tuple | None = None
    # The SMs the block scheduler gives the first CTAs of a launch, in launch order (a
    # permutation of the SM ids). [measured] with the map above; None = 0, 1, 2, ...
    sm_dispatch_order: tuple | None = None
    l2_bytes: int = 50 * 1024 * 1024         # [datasheet] 50 MB (H100 SXM); the H200 reports 60 MiB
    # The capacity of one LRU that stands for L2 for lines many SMs share (sim/l2cache.py,
    # sim/timeline.py). [measured] sim/profiles/<gpu>.json: experiments/l2_capacity.py (run 24)
    # -- a second sweep over a buffer whose lines two SMs read misses half its bytes at
    # 34.6 MiB on the H200 (one reader: 43.6 MiB; a reverse second sweep keeps 29.9 MiB; the
    # device attribute says 60 MiB). None = l2_bytes.
    l2_lru_bytes: int | None = None
    # Which of the L2's two partitions each SM reads through (0/1 per SM id), and what a
    # far hit adds to a near one. [measured] sim/profiles/<gpu>.json from experiments/l2_sides.py
    # (run 26): dependent loads of lines another SM brought in are all near for a reader on
    # that SM's side and half far for one on the other side (66 + 66 SMs); near 162 ns, far
    # 251 ns, a DRAM miss 362 ns, unloaded, at 1.98 GHz. None = one L2 (l2_lru_bytes). The
    # built-in far-hit figure is the H200's; which SM ids sit on which side is per chip.
    # Used only when asked (sim.timeline.run(partitions=True), l2cache.replay(sides=...)).
    l2_side_by_sm: tuple | None = None
    l2_far_hit_extra_ns: float = 89.4
    hbm_tbs: float = 3.35                    # [datasheet]
    hbm_efficiency: float = 0.85             # [assumed] achievable fraction of the datasheet bandwidth
    store_bytes_per_clk: float = 32.0        # [assumed] direct epilogue: fragment-layout st.global per SM
    # ---- barriers and launch ----
    bar_sync_clk: int = 24                   # [paper] bar.sync of one block, all warps arriving together
    mbarrier_arrive_clk: int = 8             # [assumed]
    mbarrier_wait_clk: int = 20              # [assumed] try_wait that succeeds (incl. the wake-up)
    # V2's runtime stage index, per K iteration on the waiting thread's critical path:
    # stage = iter % stages, the runtime stage offsets of the shared-memory addresses and the
    # mbarrier, and reading/flipping that stage's phase. [assumed] 16 clk: a few dependent
    # ALU ops (~4 clk each) when the phases are bits of one register (phase_storage="register",
    # our V2). Was 100 (an L1 round trip charged to every V2).
    runtime_index_clk: int = 16
    # ... plus this when the phases are a runtime-indexed array in local memory
    # (phase_storage="local", the tutorial's V2): a store and a dependent load through L1.
    # [measured] 54 clk, derived from the pair "v2 128x128x64 s2 local" / "v2 128x128x64 s2"
    # in experiments/results/h200-sxm/clock.csv (held in): 2.4096 M vs 2.3382 M SM clocks
    # per kernel (ms x in-kernel clock) = 71.4 K clk over 10.34 waves x 128 K iterations,
    # ~54 clk per iteration, taking the extra latency as fully exposed on each SM's critical
    # path. Cross-check: an L1 hit is ~30-40 clk [paper], so store + dependent load ~60-70.
    phase_local_clk: int = 54
    # ---- the clock a kernel earns (sim/clock.py; fourteenth pass) ----
    # (c_t, c_l, c_d, g) of  c_t SMs u (f / 1.8)^g + c_l L2->SM TB/s + c_d DRAM TB/s = 1, the
    # limit that sets a GEMM's clock from its first launch after a rest. [measured]
    # sim/profiles/<gpu>.json, written by `python -m experiments.fit_clock_form .. --write`
    # (Nsight Compute, run 48). None = no form: predict(clock="earned") refuses.
    clock_form_coef: tuple | None = None
    clock_form_g: float = 2.5
    # The clock WGMMA kernels count when nothing holds them: 0.91 of the 1.98 GHz boost.
    # [measured] run 36 (experiments/NOTES.md 40): the WGMMA-only loop on 12-88 SMs counts
    # 1.79-1.81 GHz while nvidia-smi reports 1.98.
    wgmma_clock_top_ghz: float = 1.80
    cta_launch_clk: int = 600                # [assumed] CTA start: block scheduling, mbarrier init, first sync
    launch_us: float = 4.0                   # [assumed] kernel launch inside a CUDA-event timing
    # ---- fixed costs of a call, and the features of the persistent clustered kernels ----
    host_call_us: float = 34.6               # [measured] host time of one warm gemm.matmul call
    host_launch_us: float = 7.0              # [paper] each further kernel a call launches (cuda.core)
    cluster_arrive_clk: int = 200            # [assumed] a remote mbarrier arrive inside a cluster
    multicast_receive_cost: float = 0.0      # [assumed] port cost of a multicast part another CTA loads
    tma_store_bytes_per_ns: float | None = None  # [assumed] TMA store out of shared memory; None: the L2 port rate

    def __post_init__(self):
        # the nanosecond figures, when given, fix the per-SM-clock ones at this clock
        if self.l2_sm_bytes_per_ns is not None:
            object.__setattr__(self, "l2_sm_bytes_per_clk", self.l2_sm_bytes_per_ns / self.clock_ghz)
            agg = self.l2_read_tbs * 1e3 if self.l2_read_tbs is not None else self.l2_sm_bytes_per_ns * self.sm_count
            object.__setattr__(self, "l2_read_bytes_per_clk", agg / self.clock_ghz)
        elif self.l2_read_tbs is not None:
            object.__setattr__(self, "l2_read_bytes_per_clk", self.l2_read_tbs * 1e3 / self.clock_ghz)
        if self.l2_request_ns is not None:
            object.__setattr__(self, "l2_request_clk", self.l2_request_ns * self.clock_ghz)

    @property
    def l2_in_ns(self) -> bool:
        """True when the L2 -> SM path is given in nanoseconds (independent of the SM clock)."""
        return self.l2_sm_bytes_per_ns is not None

    # ---- derived ----
    @property
    def peak_tflops(self) -> float:
        """Dense fp16 tensor peak at the model clock."""
        return self.sm_count * self.tensor_flops_per_clk * self.clock_ghz * 1e-3

    @property
    def datasheet_peak_tflops(self) -> float:
        return self.sm_count * self.tensor_flops_per_clk * self.clock_peak_ghz * 1e-3

    def l2_share_bytes_per_clk(self, active_sms: int | None = None) -> float:
        """L2 -> SM bytes per clock one SM gets while `active_sms` SMs pull together:
        its port, or an even share of the aggregate L2 read bandwidth, the smaller."""
        n = max(1, min(self.sm_count, active_sms or self.sm_count))
        return min(self.l2_sm_bytes_per_clk, self.l2_read_bytes_per_clk / n)

    def l2_miss_charge(self, active_sms: int | None = None) -> float:
        """Extra L2 -> SM port time of a missed byte, as a multiple of a hit byte's: the fill is
        a GPU-wide cost shared by the busy SMs, charged in full with every SM busy and in
        proportion on a partly idle GPU (experiments/NOTES.md 33, 46-47)."""
        n = max(1, min(self.sm_count, active_sms or self.sm_count))
        return self.l2_miss_port_factor * n / self.sm_count

    def l2_feed_bytes_per_clk(self) -> float:
        """What the L2 can deliver to all SMs together, bytes per SM clock."""
        return min(self.l2_sm_bytes_per_clk * self.sm_count, self.l2_read_bytes_per_clk)

    def ns_to_clk(self, ns: float) -> float:
        return ns * self.clock_ghz

    def hbm_bytes_per_clk_per_sm(self, active_sms: int | None = None) -> float:
        """One SM's share of the achievable HBM bandwidth while `active_sms` SMs pull."""
        n = max(1, min(self.sm_count, active_sms or self.sm_count))
        return self.hbm_tbs * 1e12 * self.hbm_efficiency / (self.clock_ghz * 1e9) / n

    def wgmma_tail(self, n: int) -> int:
        keys = sorted(self.wgmma_tail_clk)
        for k in keys:
            if n <= k:
                return self.wgmma_tail_clk[k]
        return self.wgmma_tail_clk[keys[-1]]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_H100 = GpuProfile(
    name="h100-sxm",
    sm_count=132,            # [datasheet] H100 SXM5
    clock_max_ghz=1.98,      # [datasheet] max boost
    clock_peak_ghz=1.83,     # [datasheet] 989.4 TFLOPS = 132 x 4096 x 1.83 GHz
    # built-in fallback only: sim/profiles/h100-sxm.json sets the sustained clock measured
    # inside our kernels on the H200 (same GH100 die, same 700 W SXM limit; an [assumed]
    # transfer). 1.83 GHz is the datasheet peak's clock, not a reading.
    clock_ghz=1.83,
    hbm_tbs=3.35,            # [datasheet] HBM3
)

_H200 = dataclasses.replace(
    _H100,
    name="h200-sxm",
    # built-in fallback only (an nvidia-smi midpoint, 1.56-1.77 GHz); sim/profiles/h200-sxm.json
    # sets the in-kernel sustained clock (experiments/results/h200-sxm/clock.csv)
    clock_ghz=1.665,
    hbm_tbs=4.8,             # [datasheet] HBM3e
    l2_bytes=60 * 1024 * 1024,  # [measured] the device attribute L2CacheSize (run 24)
)

PROFILES: dict[str, GpuProfile] = {p.name: p for p in (_H100, _H200)}


def write_profile_parameters(name: str, parameters: dict, provenance: dict,
                             profiles_dir: Path | str | None = None) -> Path:
    """Lay `parameters` (with one provenance line each) into sim/profiles/<name>.json, keeping
    what else it holds: how the calibration scripts record what they measured."""
    path = Path(profiles_dir or PROFILES_DIR) / f"{name}.json"
    data = json.loads(path.read_text()) if path.exists() else {"provenance": {}, "parameters": {}}
    data["provenance"].update(provenance)
    data["parameters"].update(parameters)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def load_profile(name: str, profiles_dir: Path | str | None = None) -> GpuProfile:
    """The named profile, with sim/profiles/<name>.json (if present) laid over it."""
    try:
        base = PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown GPU profile {name!r}; known: {', '.join(PROFILES)}") from None
    path = Path(profiles_dir or PROFILES_DIR) / f"{name}.json"
    if not path.exists():
        return base
    data = json.loads(path.read_text())
    data = data.get("parameters", data)  # allow {"provenance": ..., "parameters": {...}}
    known = {f.name for f in dataclasses.fields(GpuProfile)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{path}: unknown profile keys {unknown}")
    for key in ("l2_feed_by_sm", "sm_dispatch_order", "l2_side_by_sm", "clock_form_coef"):  # lists -> tuples (frozen)
        if data.get(key) is not None:
            data[key] = tuple(data[key])
    if "wgmma_tail_clk" in data:
        data["wgmma_tail_clk"] = {int(k): v for k, v in data["wgmma_tail_clk"].items()}
    return dataclasses.replace(base, **data)
