"""The racecheck study's kernel (experiments/research/handshake_race.py), without a GPU: each
variant assembles for sm_90a as a cluster of two, and the sums it is checked against."""
import pytest

from experiments.research.handshake_race import VARIANTS, expected_sums, kernel_ptx


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_assembles_as_a_cluster_of_two(variant):
    pytest.importorskip("numba.cuda")
    from gemm.compile import assemble
    ptx = kernel_ptx(variant)
    assert ".reqnctapercluster 2, 1, 1" in ptx
    assert ("[bar_free]" in ptx.split("LOOP:")[1]) == (variant == "mbarrier")
    assert ("barrier.cluster.arrive" in ptx.split("LOOP:")[1].split("END:")[0]) == (variant == "cluster-barrier")
    cubin, _ = assemble(ptx)
    assert cubin[:4] == b"\x7fELF"


def test_each_thread_sums_what_its_partner_sent():
    sums = expected_sums(clusters=1, rounds=2)
    # rank 0 reads rank 1's r 1000 + 100 + tid, rank 1 reads rank 0's r 1000 + tid
    assert sums[0] == 1200 and sums[5] == 1210 and sums[128] == 1000 and sums[133] == 1010
