"""Weights packed for bulk copies (gemm/packed.py, gemm.smem_layout's packed image), without a
GPU: the image against the swizzle's definition on address bits, which schedules can read it,
what the dispatcher runs with it, and the errors of bad input."""
import numpy as np
import pytest

from gemm.kernels import KernelConfig
from gemm.packed import pack_image, packed_gaps_of
from gemm.schedule import KernelGapError, ScheduleError, from_spec
from gemm.smem_layout import packed_k, packed_row_tile_bytes, packed_rows

DECODE_PAIR = from_spec("v7:block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,split_k=2,"
                        "swap_ab=true,epilogue=direct,producer_registers=0,consumer_registers=0,split_cluster=true,"
                        "split_lead=2")


@pytest.mark.parametrize("n,k", [(64, 128), (70, 200), (200, 64), (1, 1)])
def test_each_element_lies_where_tma_128_byte_swizzle_puts_it(n, k):
    """Element (row, col) of W [N, K] lies in the box of row tile row // 64 and K box col // 64,
    at the byte offset TMA's 128-byte swizzle gives its place in that box: the offset's bits 4-6
    XORed with bits 7-9 (Swizzle<3,4,3>); everything past N and K is zero."""
    rng = np.random.default_rng(n * 1000 + k)
    w = rng.integers(1, 1 << 16, size=(n, k), dtype=np.uint16)   # no zeros: a zero is padding
    image = pack_image(w, np)
    rows, depth = packed_rows(n), packed_k(k)
    assert image.shape == (rows // 64, depth // 64, 64, 64)
    flat = image.reshape(-1)
    assert flat.size * 2 == (rows // 64) * packed_row_tile_bytes(k)
    r, c = np.meshgrid(np.arange(n), np.arange(k), indexing="ij")
    in_box = (r % 64) * 128 + (c % 64) * 2
    swizzled = in_box ^ (((in_box >> 7) & 7) << 4)
    byte = (r // 64) * packed_row_tile_bytes(k) + (c // 64) * 8192 + swizzled
    assert np.array_equal(flat[byte // 2], w)
    assert np.count_nonzero(flat) == n * k


def test_padding_rounds_k_to_128_and_rows_to_boxes_plus_slack():
    assert (packed_k(1), packed_k(128), packed_k(129), packed_k(11008)) == (128, 128, 256, 11008)
    assert (packed_rows(1), packed_rows(64), packed_rows(4096)) == (64 + 192, 64 + 192, 4096 + 192)


@pytest.mark.parametrize("spec", [
    DECODE_PAIR.name,
    "v7:block_m=64,consumer_warpgroups=1,block_n=64,stages=8,split_k=2,swap_ab=true,epilogue=direct,"
    "producer_registers=0,consumer_registers=0,split_cluster=true",
    "v7", "v7:cluster_m=2", "v7:block_n=192,stages=4"])
def test_the_decode_picks_and_v7_tiles_read_packed_weights(spec):
    assert packed_gaps_of(from_spec(spec)) == []


@pytest.mark.parametrize("spec,packed,limit", [
    ("v7:block_n=16,stages=10,producer_registers=0,consumer_registers=0,epilogue=direct", "b", "64-row boxes"),
    ("v7:block_n=320", "b", "at most 256 rows"),
    ("v7:block_k=32,stages=6", "b", "128-byte swizzle"),
])
def test_a_tile_that_cannot_read_packed_weights_names_the_limit(spec, packed, limit):
    with pytest.raises(ScheduleError, match=limit):
        KernelConfig(from_spec(spec), "float16", "k", "k", packed=packed)


def test_packed_weights_need_the_producer_warpgroup_kernel_and_a_k_major_tile():
    with pytest.raises(KernelGapError, match="producer-warpgroup"):
        KernelConfig(from_spec("v2"), packed="b")
    with pytest.raises(ScheduleError, match="K-major"):
        KernelConfig(from_spec("v7"), "float16", "k", "mn", packed="b")
    with pytest.raises(ValueError, match="packed must be"):
        KernelConfig(from_spec("v7"), packed="c")


def test_the_kernel_cache_key_ignores_how_the_schedule_is_spelled():
    from gemm.compile import cache_key
    respelled = from_spec("v7:split_lead=2,block_m=64,consumer_warpgroups=1,block_n=16,block_k=128,stages=8,"
                          "split_k=2,swap_ab=true,epilogue=direct,producer_registers=0,consumer_registers=0,"
                          "split_cluster=true")
    assert respelled.name != DECODE_PAIR.name
    assert cache_key(KernelConfig(respelled)) == cache_key(KernelConfig(DECODE_PAIR))
    assert cache_key(KernelConfig(DECODE_PAIR, packed="a")) != cache_key(KernelConfig(DECODE_PAIR))


def test_the_dispatcher_keeps_a_plan_that_reads_packed_weights_and_replaces_one_that_cannot():
    from gemm.dispatch import Plan, choose, choose_packed
    plain = choose(16, 4096, 11008)
    assert choose_packed(plain, 16, 4096, 11008) is plain
    narrow = Plan(from_spec("v7:block_n=16,stages=10,producer_registers=0,consumer_registers=0,"
                            "epilogue=direct"), "table", "")
    other = choose_packed(narrow, 300, 4096, 4096)
    assert other.schedule != narrow.schedule and packed_gaps_of(other.schedule) == []
    assert "cannot read packed weights" in other.detail


def test_bad_input_to_pack_weights_and_matmul():
    import gemm
    with pytest.raises(TypeError, match="CuPy array or a PyTorch CUDA tensor"):
        gemm.pack_weights(np.zeros((4, 4), np.float16))
    from gemm.api import _describe
    from gemm.packed import PackedWeights
    fake = PackedWeights(None, 64, 64, "float16", "cupy", 0)
    with pytest.raises(TypeError, match="takes them as b"):
        _describe(fake, "a")
