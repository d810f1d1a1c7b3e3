"""GPU profiles for the pipeline model: every parameter, what it is and where it comes from.

Units: SM clocks ("clk") for what happens inside an SM, nanoseconds for the memory system
(it does not run on the SM clock), bytes, TB/s = 1e12 B/s, microseconds for the host.

Each field carries its source as metadata (`GpuProfile.source(name)`, and the table in
docs/model.md that `python -m sim.docs` writes):
  datasheet  NVIDIA datasheet, whitepaper, CUDA programming guide or PTX ISA (gemm/limits.py);
  measured   measured on the lent H200 by a committed microbenchmark or sweep (named);
  paper      order of magnitude from published microbenchmarks, not re-checked here;
  assumed    no measurement yet: a best guess with its reasoning (and, in the report that
             introduced it, the microbenchmark that would measure it).
`load_profile(name)` returns the built-in profile with sim/profiles/<name>.json laid over it;
that file's "provenance" says where each of its values comes from, in place of the default's.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import gemm.limits as limits

PROFILES_DIR = Path(__file__).with_name("profiles")
RESULTS = "experiments/results/h200-sxm"


def _p(default, tag: str, what: str, source: str = ""):
    """A profile parameter: its default, the kind of its source, what it is, where it comes from."""
    kw = {"default_factory": default} if callable(default) else {"default": default}
    return field(metadata={"tag": tag, "what": what, "source": source}, **kw)


def _required(tag: str, what: str, source: str = ""):
    return field(metadata={"tag": tag, "what": what, "source": source})


@dataclass(frozen=True)
class GpuProfile:
    name: str = _required("", "profile name")
    # ---- SMs and clocks ----
    sm_count: int = _required("datasheet", "SMs (H100 / H200 SXM: 132)")
    clock_max_ghz: float = _required("datasheet", "maximum boost clock, GHz")
    clock_peak_ghz: float = _required("datasheet", "the clock the datasheet's dense peak is quoted at, GHz",
                                      "989.4 TFLOPS = 132 SMs x 4096 FLOP/clk x 1.83 GHz")
    clock_ghz: float = _required("measured", "the sustained SM clock a dense GEMM runs at: the model's clock",
                                 "sim/profiles/<gpu>.json")

    # ---- per-SM resources (compute capability 9.0) ----
    smem_per_sm: int = _p(limits.SHARED_BYTES_PER_SM, "datasheet", "shared memory per SM, bytes")
    smem_per_block: int = _p(limits.MAX_SHARED_BYTES_PER_BLOCK, "datasheet", "opt-in maximum per block, bytes")
    smem_reserved_per_block: int = _p(limits.RESERVED_SHARED_BYTES_PER_BLOCK, "datasheet",
                                      "shared memory the system reserves per resident block")
    regs_per_sm: int = _p(limits.REGISTERS_PER_SM, "datasheet", "32-bit registers per SM")
    max_regs_per_thread: int = _p(limits.MAX_REGISTERS_PER_THREAD, "datasheet", "registers per thread, at most")
    reg_alloc_unit: int = _p(limits.REGISTER_ALLOCATION_UNIT, "datasheet",
                             "registers are allocated per warp in units of this many")
    max_threads_per_sm: int = _p(limits.MAX_THREADS_PER_SM, "datasheet", "resident threads per SM")
    max_ctas_per_sm: int = _p(limits.MAX_BLOCKS_PER_SM, "datasheet", "resident blocks per SM")
    reg_overhead: int = _p(26, "measured", "registers a GEMM thread holds besides its accumulators",
                           f"the V1 and V2 Numba builds of 128x128x64 (128 accumulators) use 154 registers per "
                           f"thread ({RESULTS}/measured.csv, registers); taken as the same for the specialized "
                           "kernels without setmaxnreg")

    # ---- tensor cores ----
    tensor_flops_per_clk: int = _p(4096, "datasheet", "dense fp16/bf16 FLOP per SM per clock (4 tensor cores), "
                                   "fp32 or fp16 accumulation alike", "H100 whitepaper")
    smem_bytes_per_clk: int = _p(128, "datasheet", "shared-memory bandwidth per SM: the epilogue's writes",
                                 "32 banks x 4 B per clock")
    wgmma_smem_bytes_per_clk: int = _p(100, "measured", "the rate WGMMA reads its A and B operands from shared "
                                       "memory: what bounds an instruction narrower than N = 128",
                                       f"the load-free warp-specialized loop at one CTA an SM "
                                       f"({RESULTS}/mma_loop_small_tiles.csv): one warpgroup's m64n64k16 takes 40.5 "
                                       "clocks a K tile's instruction waiting for each group, 41.5 with one in "
                                       "flight (64 and 128 deep K tiles: the slopes), for 4 KB of operands; "
                                       "N = 128 and 256 run at their math rate (64-68 and 139 clocks)")
    tma_writes_share_smem: bool = _p(False, "measured", "whether TMA's writes into shared memory take WGMMA's "
                                     "operand bandwidth",
                                     f"refuted: sharing caps a 128x128x64 K tile at 80% of the tensor peak per "
                                     f"clock; {RESULTS}/clock.csv has V2 128x128x64 s3 at 89.5% and s2 at 87.0%")
    wgmma_issue_clk: int = _p(8, "assumed", "issue of one wgmma.mma_async; only a group's first is on the "
                              "warp's path (the rest issue while earlier ones run)")
    wgmma_fence_commit_clk: int = _p(16, "assumed", "wgmma.fence + commit_group per group")
    wgmma_tail_clk: dict = _p(lambda: {64: 22, 128: 30, 256: 45}, "measured",
                              "a WGMMA group's result latency after its last instruction leaves the tensor "
                              "cores, by N",
                              f"N=128 from the load-free loop at 1 CTA/SM ({RESULTS}/mma_loop.csv, 128x128x64 "
                              "s4: 71.6% of the peak per clock) given the other exposed costs; the 3:4:6 shape "
                              "by N assumed. Only its sum with bar_sync_clk is pinned")
    wgmma_wait_clk: int = _p(16, "assumed", "wgmma.wait_group returning once its group is done")
    wgmma_fill_clk: int = _p(23, "measured", "tensor-core time per WGMMA group that does no math (the pipe's "
                             "fill when it switches to a new group)",
                             f"the load-free loop at 3 CTAs/SM ({RESULTS}/mma_loop.csv, 128x128x64 s2: 91.6% "
                             "of the peak per clock); held out: 2 CTAs/SM, 128x192x64, 64x128x64 (within 5%)")

    # ---- TMA (cp.async.bulk.tensor) ----
    tma_issue_clk: int = _p(40, "assumed", "one tensor copy's issue by the elected thread")
    tma_latency_ns: float = _p(250.0, "measured", "round trip of a TMA box that hits L2, before its bytes "
                               "stream in (the transfer and the FIFO wait on the port come on top)",
                               f"the latency-bound V1 128x192x16 (2 CTAs/SM, {RESULTS}/measured.csv) takes "
                               "773-795 ns per K iteration per CTA, of which the transfer and the WGMMAs, "
                               "syncs and issue explain all but ~190 ns and the miss share. A lone 16 KB box "
                               f"measures 360 ns ({RESULTS}/tma_latency.csv)")
    tma_oob_row_ns: float = _p(0.0, "assumed", "the SM's TMA unit's time to write the zeros of one box row "
                               "outside the matrix (an edge tile's, or a tile taller than M) into shared "
                               "memory, beside the other boxes' transfers: 0 takes them as free",
                               "python -m experiments.research.tma_oob_rows")
    hbm_latency_ns: float = _p(800.0, "assumed", "the same round trip for a box with lines that miss L2 "
                               "(loaded)",
                               f"{RESULTS}/tma_latency.csv: a lone 16 KB box missing on every SM 652 ns "
                               "(hitting 360), two in flight per SM 1294 / 856, 1.9-4.7 us at four to eight "
                               "(DRAM queueing). hbm - tma latency is also sim/convoy.py's threshold")
    tma_inflight_bytes: int = _p(256 * 1024, "assumed", "bytes of TMA loads one SM keeps in flight")

    # ---- the L2 -> SM path (in ns: the L2 does not run on the SM clock) ----
    l2_sm_bytes_per_ns: float | None = _p(160.0, "measured", "one SM's L2 -> SM stream rate, bytes per ns",
                                          f"the load-only loop ({RESULTS}/load_loop.csv: the V2 loop without "
                                          "WGMMA at 1.97-1.98 GHz) at each row's clock and residency; fitted "
                                          "(minimax over a grid) on 128x128x64 s2 and s4 and 128x128x16 s2 "
                                          "with l2_request_ns and l2_miss_port_factor, the other rows held out "
                                          "(`python -m experiments.research.fit_port`). 128-B rows of hits: 75 B/ns "
                                          "per SM, 9.9 TB/s for 132 SMs. Known miss: V2 64x256x64 moves "
                                          "11.3-12.0 TB/s with the same rows")
    l2_request_ns: float | None = _p(0.9, "measured", "port time per L2 request (one per box row of <= 128 B)",
                                     "with l2_sm_bytes_per_ns, same fit")
    l2_read_tbs: float | None = _p(None, "measured", "aggregate L2 -> SM TB/s; None: the ports' sum",
                                   f"the A100's 5120 B/clk is refuted: V2 64x256x64 moves 11.5-12.0 TB/s "
                                   f"({RESULTS}/measured.csv)")
    l2_request_additive: bool = _p(True, "measured", "a box's port time is its requests' time plus its bytes' "
                                   "(False: the larger of the two)",
                                   f"the max form leaves the 64-B-row (block_k=32) GEMMs 14-18% fast "
                                   f"({RESULTS}/clock.csv V2 128x128x32: +14.4%, with the sum -5.2%)")
    l2_lone_sm_bytes_per_ns: float | None = _p(160.0, "measured", "one SM's own L2 -> SM port, bytes per ns: a "
                                               "box takes the larger of its bytes' time and its requests' "
                                               "(l2_lone_request_ns). With fewer SMs pulling than the full grid each "
                                               "gets the full grid's share above scaled by the SMs that pull, but "
                                               "never more than its own port (GpuProfile.port_clk). None: the full "
                                               "grid's share at any SM count",
                                               "the load-only loop on 8-66 SMs, one CTA an SM, L2-resident operands "
                                               f"({RESULTS}/port_by_sms.csv, runs 170-171): 128-B rows 155-182 B/ns "
                                               "an SM, flat from 8 to 66 SMs")
    l2_lone_request_ns: float = _p(0.55, "measured", "the same port's time per request (one per box row of <= 128 "
                                   "B)", f"{RESULTS}/port_by_sms.csv: 64-B rows 1.70 and 32-B rows 1.83 requests "
                                   "a ns an SM on 8-66 SMs")
    l2_sm_bytes_per_clk: float = _p(64.0, "derived", "the port's rate per SM clock",
                                    "l2_sm_bytes_per_ns / clock_ghz when that is set")
    l2_request_clk: float = _p(2.0, "derived", "a request's port time in SM clocks", "l2_request_ns x clock_ghz")
    l2_misaligned_row_clk: float = _p(4.7, "measured", "SM clocks the L2 side spends on each box row an SM itself "
                                      "requests (its own part of a multicast box) whose line starts inside a "
                                      "32-byte sector (the row's 128 bytes touch five sectors of two cache "
                                      "lines): a throughput limit beside the port, not in a load's latency; 0 "
                                      "takes such rows as free",
                                      "python -m experiments.research.line_pitch (sim/profiles/h200-sxm.json)")
    l2_line_straddle_row_clk: float = _p(0.0, "measured", "the same for a box row whose line starts on a 32-byte "
                                         "sector but inside a 128-byte line (its four sectors lie in two lines)",
                                         "python -m experiments.research.line_pitch --summarize RECORD, on a "
                                         "record of --dump --cases sectors (sim/profiles/h200-sxm.json)")
    l2_read_bytes_per_clk: float = _p(8448.0, "derived", "aggregate L2 read bytes per SM clock",
                                      "l2_read_tbs (or the ports' sum) / clock_ghz")
    l2_miss_port_factor: float = _p(0.4, "measured", "extra port time of a byte that misses L2, as a multiple "
                                    "of a hit's (the fill competes with the reads), charged in proportion to "
                                    "the busy SMs",
                                    "fitted on the three load-only loops above with the HBM bytes predict() "
                                    "gives them (`python -m experiments.research.fit_port --model-misses`; with the "
                                    "HBM rate and launch measured in run 31 the fit moves to 0.5, kept at "
                                    "0.4: 0.5 breaks the small-grid and fixed-cost invariants, notes 97); the "
                                    "proportion: the load-only loop on 12-88 busy SMs pulls the hit-only rate "
                                    "with 9-29% of its bytes missing (tests/test_power_sweep.py). The "
                                    "mechanism is assumed")
    timeline_miss_port_factor: float = _p(0.5, "measured", "the same for sim/timeline.py, on its own misses",
                                          f"the value in 0.3-0.8 whose largest error on the four 128x128x64 "
                                          f"load-only loops ({RESULTS}/load_loop.csv) is smallest "
                                          "(`python -m experiments.research.timeline_bytes --calibrate`)")

    # ---- how a free-running grid's CTAs spread (sim/convoy.py's replay) ----
    free_running_fast_sms: int = _p(12, "measured", "SMs that run free-running CTAs faster for a whole launch",
                                    f"per-CTA clock-probe stamps of V2, V2-local and V3 s3 in a grouped "
                                    f"raster, three launches each (`python -m experiments.research.drift --free-cv`, "
                                    f"{RESULTS}/drift.csv); held kernels show no fast SMs")
    free_running_fast_sm_factor: float = _p(0.816, "measured", "their CTAs' duration over the others'",
                                            "same stamps (0.78-0.88)")
    free_running_cta_cv: float = _p(0.0335, "measured", "each free-running CTA's own spread (CV) once its "
                                    "SM's factor and the slowdown all SMs share are taken out",
                                    "same stamps (3.1-3.5%)")
    l2_feed_by_sm: tuple | None = _p(None, "measured", "relative L2 -> SM feed time per SM id (mean 1); None: "
                                     "alike", "sim/profiles/<gpu>.json")
    sm_dispatch_order: tuple | None = _p(None, "measured", "the SMs the block scheduler gives a launch's first "
                                         "CTAs, in order", "sim/profiles/<gpu>.json")

    # ---- the L2 and HBM ----
    l2_bytes: int = _p(50 * 1024 * 1024, "datasheet", "L2 capacity (H100 SXM 50 MB; the H200 reports 60 MiB)")
    l2_lru_bytes: int | None = _p(None, "measured", "the capacity of the one LRU that stands for L2 for lines "
                                  "several SMs share (sim/l2cache.py); None: l2_bytes", "sim/profiles/<gpu>.json")
    l2_side_by_sm: tuple | None = _p(None, "measured", "which L2 partition each SM reads through (used only "
                                     "when asked)", "sim/profiles/<gpu>.json")
    l2_far_hit_extra_ns: float = _p(89.4, "measured", "what a hit in the far L2 partition adds to a near one",
                                    f"{RESULTS}/l2_sides.csv (`python -m experiments.research.l2_sides`)")
    hbm_tbs: float = _p(3.35, "datasheet", "HBM bandwidth, TB/s")
    hbm_efficiency: float = _p(0.85, "assumed", "the share of the datasheet HBM bandwidth a copy reaches "
                               "(read + written)")
    hbm_read_efficiency: float | None = _p(None, "measured", "the share of the datasheet HBM bandwidth our "
                                           "kernels' TMA reads stream at once under way, whatever their ring "
                                           "keeps in flight (4-25 MiB GPU-wide); None: hbm_efficiency",
                                           "python -m experiments.research.hbm_stream")
    hbm_stream_fixed_us: float = _p(0.0, "measured", "what a launch bound by HBM pays beyond launch_us: the "
                                    "first misses' latency, the rings' fill, the last CTAs' end",
                                    "python -m experiments.research.hbm_stream (the intercept of time against "
                                    "bytes, less what the model gives the same cases with this term at 0)")
    hbm_write_efficiency: float | None = _p(None, "measured", "the share of the datasheet HBM bandwidth a "
                                            "write-only stream reaches: a launch whose bytes are mostly C's "
                                            "writes (short K) takes at least its writes at this rate; None: "
                                            "writes count at the read rate", "torch's fill, back to back "
                                            "(docs/research/patches/spread142.py, write_bound_ab.py)")

    # ---- epilogue ----
    store_bytes_per_clk: float = _p(32.0, "assumed", "the direct epilogue: one warpgroup's st.global of C in "
                                    "the accumulator fragment layout, bytes per clock")
    staged_epilogue_clk: float = _p(0.0, "measured", "a consumer warpgroup's staged epilogue (epilogue='tma') "
                                    "besides its share's bytes into shared memory at smem_bytes_per_clk, one "
                                    "named barrier and a TMA issue for each of its boxes: the leader's check that "
                                    "the last tile's store has read the staging tile, the second named barrier, "
                                    "the async-proxy fence; once a tile, on the consumers' path; 0 leaves it out",
                                    "clock64 stamps of consumer thread 0 around each tile's epilogue (sim/profiles/"
                                    "<gpu>.json)")
    tma_store_bytes_per_ns: float | None = _p(None, "assumed", "a TMA store out of shared memory to L2, bytes "
                                              "per ns; None: the L2 port's read rate",
                                              "the write direction of the SM's port taken as fast as the read "
                                              "one and not shared with it")

    # ---- barriers ----
    bar_sync_clk: int = _p(24, "paper", "bar.sync of one block, all warps arriving together")
    # ---- split-K's and stream-K's partial tiles (python -m experiments.research.split_k_phases) ----
    split_store_bytes_per_ns: float | None = _p(None, "measured", "one CTA's stores of its fp32 partial tile "
                                                "(8-byte stores in the accumulator fragment layout) up to the "
                                                "fence that makes them visible GPU-wide, bytes per ns; None: the "
                                                "direct epilogue's store_bytes_per_clk, and the sum at the GPU's "
                                                "rates after the K loops (sim.call.in_kernel_reduce_s)",
                                                "the slope of the stores-and-fence phase against the tile's fp32 "
                                                "bytes over the probe's split-K cases")
    split_sum_bytes_per_ns: float | None = _p(None, "measured", "one CTA's sum of its share of a split tile: the tile's "
                                       "fp32 bytes it reads over every slice's partial (16-byte loads through L2), "
                                       "bytes per ns", "the slope of the sum phase, same cases")
    split_sync_us: float = _p(0.0, "measured", "a split unit's fixed cost on its CTA's path besides those bytes: "
                              "the fence's drain, the handshake (the count-in and the poll that sees the tile's "
                              "last slice, beyond that slice's own arrival) and the sum's first loads' latency; a "
                              "stream-K share handed over (a flag set and seen) pays it too",
                              "the two phases' intercepts and the handshake's median, same cases")
    cluster_exchange_bytes_per_ns: float = _p(25.0, "assumed", "split_cluster: one CTA's stores of its fp32 "
                                              "partial's shares into its partners' shared memory "
                                              "(st.shared::cluster over the SM-to-SM network), bytes per ns",
                                              "the order of the SM-to-SM network's rate per SM that published "
                                              "Hopper microbenchmarks report (~3.3 TB/s over a full GPU); to "
                                              "measure: experiments.research.split_k_phases on split_cluster "
                                              "kernels")
    cluster_exchange_sync_us: float = _p(0.5, "assumed", "split_cluster: a tile's round of barriers on the "
                                         "CTA's path (the release of its sends, the wait for every slice's, "
                                         "the \"free\" wait before the next tile's)",
                                         "a few remote-arrive and acquire round trips of ~0.2 us; to measure "
                                         "as cluster_exchange_bytes_per_ns")
    cluster_sum_bytes_per_ns: float = _p(100.0, "assumed", "split_cluster: one CTA's sum of its share, the "
                                         "tile's fp32 bytes over every slot read from its own shared memory "
                                         "with its C stores, bytes per ns",
                                         "shared memory reads well under their 128 B a clock, the share's C "
                                         "stores beside them; to measure as cluster_exchange_bytes_per_ns")
    cluster_slots: dict = _p(dict, "measured", "CTAs the GPU holds at once, by cluster size, for kernels of one "
                             "CTA per SM (a cluster's CTAs share a GPC, so a size that does not divide every GPC's "
                             "SMs leaves some idle); a size not listed: every SM",
                             "cuOccupancyMaxActiveClusters (gemm.launch._resident_clusters)")
    mbarrier_arrive_clk: int = _p(8, "assumed", "an mbarrier arrive")
    consumer_k_tile_clk: float = _p(0.0, "measured", "a consumer warpgroup's own clocks a K tile with the loads on, "
                                    "beyond the instructions above (the full barrier's wait as its data lands, "
                                    "the release, the loop; spread over them, not one instruction): on the "
                                    "warpgroup's path, hidden where other warpgroups' WGMMAs keep the tensor "
                                    "cores busy; 0 leaves it out",
                                    "python -m experiments.research.small_grids (sim/profiles/<gpu>.json)")
    mbarrier_wait_clk: int = _p(20, "assumed", "an mbarrier try_wait that succeeds, with the wake-up")
    runtime_index_clk: int = _p(16, "assumed", "V2's runtime stage index per K iteration: iter % stages, the "
                                "stage offsets, the phase bit (a few dependent ALU ops)")
    phase_local_clk: int = _p(54, "measured", "added when the phases are a runtime-indexed local-memory array "
                              "(the tutorial's V2): a store and a dependent load through L1",
                              f"{RESULTS}/clock.csv, V2 128x128x64 s2 local against register phases: 2.4096 M "
                              "against 2.3382 M SM clocks per kernel over 10.34 waves x 128 K iterations, taken "
                              "as exposed on each SM's path (an L1 hit is ~30-40 clk [paper])")
    cluster_arrive_clk: int = _p(248, "measured", "a remote mbarrier arrive from a cluster partner (its "
                                 "consumers releasing a stage that is multicast into), beyond the arrive and "
                                 "the try_wait charged beside it",
                                 "python -m experiments.research.cluster_coupling: one thread of each CTA of "
                                 "a pair ping-ponging arrives on the partner's mbarrier (sim/profiles/<gpu>.json)")
    multicast_receive_cost: float = _p(1.0, "measured", "port cost on one SM of the part of a multicast box "
                                       "another CTA of the cluster loads, as a share of its own",
                                       "python -m experiments.research.multicast_port: a 128x128 kernel that "
                                       "is port-bound alone runs no faster with cluster_m=2, so each SM's port "
                                       "takes in the whole box (sim/profiles/h200-sxm.json)")

    # ---- the clock a kernel earns (sim/clock.py) ----
    clock_form_coef: tuple | None = _p(None, "measured", "(c_t, c_l, c_d) of the clock form c_t SMs u (f/1.8)^g "
                                       "+ c_l L2 TB/s + c_d DRAM TB/s = 1; None: clock='earned' refuses",
                                       "sim/profiles/<gpu>.json")
    clock_form_g: float = _p(2.5, "measured", "the form's exponent g", "sim/profiles/<gpu>.json")
    wgmma_clock_top_ghz: float = _p(1.80, "measured", "the clock WGMMA kernels count when nothing holds them",
                                    "the WGMMA-only loop on 12-88 SMs counts 1.79-1.81 GHz while nvidia-smi "
                                    "reports 1.98 (`python -m experiments.research.power_sweep`)")

    # ---- fixed costs ----
    cta_launch_clk: int = _p(600, "assumed", "a CTA's prologue: block start, the tensor maps' acquire fences, "
                             "mbarrier init, the block's sync (its first loads' latency is simulated after it)",
                             "the one-wave L2-resident load-only loops (tests/test_sim_clock.py, "
                             "experiments.research.fit_port) leave no room for more: the model is already 5-14% slow "
                             "on them with the profile's port")
    launch_us: float = _p(4.0, "assumed", "a kernel's launch and drain on a stream, besides its CTAs' time")
    kernel_fixed_us: float = _p(0.0, "measured", "what a GEMM launch pays whatever its K beyond launch_us and what "
                                "the simulated CTAs do (their prologue, first loads, epilogue): not located (the "
                                "first CTAs' start, the last ones' drain); charged once a launch like launch_us",
                                "python -m experiments.research.small_grids --calibrate (sim/profiles/<gpu>.json)")
    last_round_floor: float = _p(1.0, "measured", "the least time a persistent launch's last, partial round "
                                 "of tiles takes, over a whole round's (engines.last_round_share); 1 charges "
                                 "it a whole round",
                                 "python -m experiments.research.last_round (sim/profiles/<gpu>.json)")
    last_round_slope: float = _p(0.0, "measured", "how much shorter that round is for each share of the grid "
                                 "idle in it (engines.last_round_share)",
                                 "python -m experiments.research.last_round (sim/profiles/<gpu>.json)")
    cluster_launch_us: float = _p(0.0, "measured", "what a launch whose CTAs share operands in clusters "
                                  "(Schedule.multicast_size > 1) pays beside the same tiles alone, whatever "
                                  "its walk and K: charged once a launch like launch_us",
                                  "python -m experiments.research.cluster_coupling (sim/profiles/<gpu>.json)")
    dependent_launch_saving_us: float = _p(0.0, "assumed", "what a kernel launched as a programmatic dependent "
                                           "(Schedule.dependent_launch) saves of launch_us back to back: its "
                                           "launch and prologue under the previous kernel's end (one call between "
                                           "events saves nothing)")
    dependent_launch_full_grid_saving_us: float = _p(0.0, "assumed", "the same for a dependent whose grid fills "
                                                     "the GPU (gemm.limits.fills_the_gpu): its CTAs let the next "
                                                     "kernel in once their loads are issued, not after their last "
                                                     "store (gemm.kernels.config FLAG_EARLY_TRIGGER)")
    host_call_us: float = _p(11.7, "measured", "host time of one warm gemm.matmul call",
                             f"{RESULTS}/host.csv: per warm call at 256^3, 1,000 calls back to back")
    host_floor_us: float = _p(20.5, "measured", "the least time two CUDA events around a call measure: the "
                              "host's work from one record to the other (sim/call.py event_ms)",
                              "sim/profiles/<gpu>.json")
    host_pace_us: float = _p(29.0, "measured", "one run of the timing loop on the host: a call whose kernel "
                             "ends before the host is back waits for it (sim/call.py event_ms)",
                             "sim/profiles/<gpu>.json")
    event_tail_us: float = _p(1.0, "measured", "what the events add to a kernel the host keeps ahead of",
                              "sim/profiles/<gpu>.json")
    kernel_start_share: float = _p(0.55, "measured", "where a kernel that finds the GPU idle starts (its end "
                                   "event's tail included) within the host's time from the start event's record "
                                   "to the call's return, as a share of it (sim/call.py event_ms)",
                                   "sim/profiles/<gpu>.json")
    load_clock: dict | None = _p(None, "measured", "{dtype: {early_ghz, settled_ghz, down_ms, down_ms_passes}}: the clock of the "
                                 "V6-V7 kernel (a producer warpgroup) from a rested GPU until the power limit "
                                 "pulls it down after down_ms of load, and after (sim/load_clock.py predict_under_load)",
                                 "sim/profiles/<gpu>.json")
    line_copy_gb_per_s: float | None = _p(None, "measured", "bytes read + written per second by the copy "
                                          "kernel of unaligned operands and results (gemm/padding.py); None: "
                                          "the HBM stream rate", "sim/profiles/<gpu>.json")
    host_launch_us: float = _p(7.0, "assumed", "host time of each further kernel a call launches (the "
                               "operand copies)", "a prepared cuda.core launch, ~7 us "
                               "(../shared/REFERENCES.md, host path)")

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

    @classmethod
    def source(cls, name: str) -> dict:
        """{tag, what, source} of a parameter (the built-in default's; a profile file's provenance
        says where its own value comes from)."""
        return dict(next(f for f in dataclasses.fields(cls) if f.name == name).metadata)

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

    def port_clk(self, port_bytes: float, requests: float, active_sms: int | None = None) -> float:
        """SM clocks one SM's L2 -> SM port takes for `port_bytes` (its own part of each box, any
        miss charge included) and `requests` box rows while `active_sms` SMs pull together.
        The full grid's form (l2_sm_bytes_per_ns, l2_request_ns: fitted with every SM pulling,
        misses included) is what an SM gets of the L2 then; with fewer SMs pulling, each gets
        that share scaled by the SMs that pull, but no more than its own port gives one SM
        (l2_lone_*: the larger of its bytes' and its requests' time, measured on 8-66 SMs)."""
        n = max(1, min(self.sm_count, active_sms or self.sm_count))
        byte_clk = port_bytes / self.l2_share_bytes_per_clk(n)
        request_clk = requests * self.l2_request_clk
        full = byte_clk + request_clk if self.l2_request_additive else max(byte_clk, request_clk)
        if self.l2_lone_sm_bytes_per_ns is None:
            return full
        lone = self.ns_to_clk(max(port_bytes / self.l2_lone_sm_bytes_per_ns, requests * self.l2_lone_request_ns))
        return max(lone, full * n / self.sm_count)

    def l2_miss_charge(self, active_sms: int | None = None) -> float:
        """Extra L2 -> SM port time of a missed byte, as a multiple of a hit byte's: the fill is
        a GPU-wide cost shared by the busy SMs, charged in full with every SM busy and in
        proportion on a partly idle GPU (the load-only loop on 12-88 busy SMs pulls the
        hit-only rate though 9-29% of its bytes miss)."""
        n = max(1, min(self.sm_count, active_sms or self.sm_count))
        return self.l2_miss_port_factor * n / self.sm_count

    def l2_feed_bytes_per_clk(self) -> float:
        """What the L2 can deliver to all SMs together, bytes per SM clock."""
        return min(self.l2_sm_bytes_per_clk * self.sm_count, self.l2_read_bytes_per_clk)

    def ns_to_clk(self, ns: float) -> float:
        return ns * self.clock_ghz

    def hbm_read_bytes_per_s(self) -> float:
        """The rate at which the kernels' reads stream from HBM (hbm_read_efficiency)."""
        return self.hbm_tbs * 1e12 * (self.hbm_read_efficiency or self.hbm_efficiency)

    def hbm_write_bytes_per_s(self) -> float:
        """The rate at which HBM takes writes alone (hbm_write_efficiency; else the read rate)."""
        return self.hbm_tbs * 1e12 * self.hbm_write_efficiency if self.hbm_write_efficiency \
            else self.hbm_read_bytes_per_s()

    def hbm_bytes_per_clk_per_sm(self, active_sms: int | None = None) -> float:
        """One SM's share of the kernels' HBM read rate while `active_sms` SMs pull."""
        n = max(1, min(self.sm_count, active_sms or self.sm_count))
        return self.hbm_read_bytes_per_s() / (self.clock_ghz * 1e9) / n

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
    l2_bytes=60 * 1024 * 1024,  # [measured] the device attribute L2CacheSize
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
    for key in ("wgmma_tail_clk", "cluster_slots"):   # JSON's string keys -> ints
        if key in data:
            data[key] = {int(k): v for k, v in data[key].items()}
    return dataclasses.replace(base, **data)
