"""Does compute-sanitizer's racecheck see a handshake made through mbarriers in another CTA of the
cluster? split_cluster's slot reuse, alone in a two-CTA kernel.

python -m experiments.research.handshake_race --variant mbarrier      (on the GPU; run it under
compute-sanitizer --tool racecheck to ask the question)

split_cluster (gemm/kernels/persistent.py, gemm/ptx/exchange.py) reuses the slots a partner
sends its partials into, tile after tile: a CTA reads its slots, meets its threads at a named
barrier, and one thread arrives (release at cluster scope) on the partner's "free" mbarrier;
the partner's threads wait on it (acquire at cluster scope) before they send the next tile's
partials. racecheck flags that reuse (notes 141-142) though no launch ever summed a slot
overwritten early. This kernel is that handshake and nothing else: each of a cluster's two CTAs
sends 128 floats into the partner's slot (st.shared::cluster), arrives on its "ready"
mbarrier, waits on its own "ready", reads its slot, for `rounds` rounds. Variants of the reuse:

  mbarrier         split_cluster's: the "free" mbarrier, as above
  cluster-barrier  barrier.cluster.arrive.release / wait.acquire after the reads
  none             no ordering at all: a real race (the control racecheck must flag); its
                   "ready" alternates between two mbarriers, so that a partner a round ahead
                   cannot complete a phase twice before the wait (a hang, not a race)

Each thread's sum of what it read is checked against the exact one (every value is a small
integer, every sum exact in fp32): "ok" or "WRONG".
"""
from __future__ import annotations

import argparse
import ctypes

VARIANTS = ("mbarrier", "cluster-barrier", "none")
THREADS = 128

# wait until the partner has read the slot this CTA is about to overwrite (rounds after the first)
_WAIT_FREE = {
    "mbarrier": """
    setp.eq.u32 p, r, 0;
    @p bra SEND;
    add.u32 parity, r, 1;
    and.b32 parity, parity, 1;
WAIT_FREE:
    mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [bar_free], parity;
    @!done bra WAIT_FREE;
SEND:""",
    "cluster-barrier": "",
    "none": "",
}
# this round's "ready" mbarrier (this CTA's and the partner's) and the parity of its phase
_ONE_READY = """
    mov.u32 bar_ready, ready;
    and.b32 parity, r, 1;"""
_READY = {
    "mbarrier": _ONE_READY,
    "cluster-barrier": _ONE_READY,
    "none": """
    and.b32 which, r, 1;
    mov.u32 bar_ready, ready;
    mad.lo.u32 bar_ready, which, 8, bar_ready;
    shr.u32 parity, r, 1;
    and.b32 parity, parity, 1;""",
}
# tell the partner this CTA has read its slot
_RELEASE = {
    "mbarrier": """
    bar.sync 1, 128;
    @leader mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote_free];""",
    "cluster-barrier": """
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;""",
    "none": "",
}


def kernel_ptx(variant: str) -> str:
    """The two-CTA handshake kernel `handshake(out, rounds)` in PTX."""
    return f""".version 8.0
.target sm_90a
.address_size 64

.visible .entry handshake(.param .u64 out_param, .param .u32 rounds_param)
.reqntid {THREADS}, 1, 1
.reqnctapercluster 2, 1, 1
{{
    .shared .align 16 .b8 slot[{4 * THREADS}];
    .shared .align 8 .b64 ready[2];
    .shared .align 8 .b64 free;
    .reg .pred p, done, leader;
    .reg .b32 tid, rank, partner, r, rounds, parity, value, mine, remote, bar_ready, bar_free;
    .reg .b32 remote_ready, remote_free, cta, index, which;
    .reg .f32 v, x, sum;
    .reg .b64 out, address, offset;

    ld.param.u64 out, [out_param];
    ld.param.u32 rounds, [rounds_param];
    mov.u32 tid, %tid.x;
    mov.u32 rank, %cluster_ctarank;
    xor.b32 partner, rank, 1;
    mov.u32 bar_ready, ready;
    mov.u32 bar_free, free;
    setp.eq.u32 leader, tid, 0;
    @leader mbarrier.init.shared::cta.b64 [bar_ready], 1;
    add.u32 which, bar_ready, 8;
    @leader mbarrier.init.shared::cta.b64 [which], 1;
    @leader mbarrier.init.shared::cta.b64 [bar_free], 1;
    @leader fence.mbarrier_init.release.cluster;
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    mapa.shared::cluster.u32 remote_free, bar_free, partner;
    mov.u32 mine, slot;
    mad.lo.u32 mine, tid, 4, mine;
    mapa.shared::cluster.u32 remote, mine, partner;
    mov.f32 sum, 0f00000000;
    mov.u32 r, 0;
LOOP:
    setp.ge.u32 p, r, rounds;
    @p bra END;{_WAIT_FREE[variant]}
    mad.lo.u32 value, r, 1000, tid;
    mad.lo.u32 value, rank, 100, value;
    cvt.rn.f32.u32 v, value;
    st.shared::cluster.f32 [remote], v;
    bar.sync 1, 128;
{_READY[variant]}
    mapa.shared::cluster.u32 remote_ready, bar_ready, partner;
    @leader mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote_ready];
WAIT_READY:
    mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [bar_ready], parity;
    @!done bra WAIT_READY;
    ld.shared.f32 x, [mine];
    add.f32 sum, sum, x;{_RELEASE[variant]}
    add.u32 r, r, 1;
    bra LOOP;
END:
    mov.u32 cta, %ctaid.x;
    mad.lo.u32 index, cta, {THREADS}, tid;
    mul.wide.u32 offset, index, 4;
    add.s64 address, out, offset;
    st.global.f32 [address], sum;
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    ret;
}}
"""


def expected_sums(clusters: int, rounds: int) -> list[float]:
    """Each thread's sum: in round r the partner (rank 1 - own) sent r 1000 + rank 100 + tid."""
    return [float(sum(r * 1000 + (1 - cta % 2) * 100 + t for r in range(rounds)))
            for cta in range(2 * clusters) for t in range(THREADS)]


def run(variant: str, clusters: int, rounds: int) -> tuple[int, int]:
    """Launch the variant once; (wrong sums, threads)."""
    import torch

    from gemm.compile import assemble
    from gemm.launch import Launch, load_function
    cubin, _ = assemble(kernel_ptx(variant))
    loaded = load_function(cubin, "handshake", THREADS)
    out = torch.full((2 * clusters * THREADS,), float("nan"), device="cuda")
    Launch(loaded, (2 * clusters, 1, 1), torch.cuda.current_stream().cuda_stream, (out.data_ptr(), rounds),
           arg_types=(ctypes.c_int64, ctypes.c_uint32))()
    torch.cuda.synchronize()
    got = out.tolist()
    wrong = sum(g != e for g, e in zip(got, expected_sums(clusters, rounds)))
    return wrong, len(got)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", choices=VARIANTS, default="mbarrier")
    p.add_argument("--clusters", type=int, default=8)
    p.add_argument("--rounds", type=int, default=16)
    args = p.parse_args(argv)
    wrong, threads = run(args.variant, args.clusters, args.rounds)
    print(f"{args.variant}: {args.clusters} clusters x {args.rounds} rounds: "
          + ("ok" if wrong == 0 else f"WRONG ({wrong} of {threads} sums)"), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
