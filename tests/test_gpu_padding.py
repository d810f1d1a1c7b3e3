"""The line copy (gemm/padding.py) on the GPU, every element of the destination checked and the
bytes around it too: padding operands (row- and column-major lines, offset and negative-stride
views, batches with and without a batch stride, lines shorter than a warp and longer than a
block's pass) and packing a padded result into rows of an odd length (a pair across two rows,
an odd element count); and matmul through both."""
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

POISON = 0x7E01   # a NaN pattern: any element the kernel fails to write, or writes past, shows
GUARD = 16        # poisoned elements after the destination


def _copy(src, lines, width, ld, step, matrices, dst_ld):
    """Run the copy on cupy uint16 source memory; returns the flat destination with its guard."""
    import cupy

    from gemm.padding import LineCopy, launch_copy
    dst = cupy.full(matrices * lines * dst_ld + GUARD, POISON, dtype=cupy.uint16)
    stream = cupy.cuda.get_current_stream()
    launch_copy(LineCopy(src.data.ptr, ld, step, dst.data.ptr, dst_ld, lines, width, matrices), stream.ptr)
    stream.synchronize()
    return dst.get()


def _expected(host, lines, width, ld, step, matrices, start, dst_ld):
    want = np.zeros((matrices, lines, dst_ld), dtype=np.uint16)
    for b in range(matrices):
        for i in range(lines):
            at = start + b * step + i * ld
            want[b, i, :width] = host[at:at + width]
    return np.concatenate([want.ravel(), np.full(GUARD, POISON, dtype=np.uint16)])


@pytest.mark.parametrize("lines, width, ld, matrices, step, offset, dst_ld", [
    (4095, 4099, 4099, 1, 0, 0, 4160),          # odd4095's A: rows of 8198 bytes, padded to 128 bytes
    (4095, 4099, 4099, 1, 0, 0, 4104),          # ... or to 16 (any pitch of 8 elements)
    (333, 259, 259, 1, 0, 1, 264),              # an offset view: the base 2-byte aligned only
    (7, 3, 5, 1, 0, 3, 8),                      # lines shorter than a pass, ld past the width
    (1, 1, 1, 1, 0, 0, 8),                      # one element
    (300, 2049, 2050, 3, 300 * 2050 + 17, 2, 2056),   # matrices 17 elements past one another
    (64, 40, 41, 2, -64 * 41, 0, 40),           # a batch laid out backwards (negative batch stride)
    (5, 1030, 1030, 4, 0, 0, 1032),             # a batch stride of 0: one matrix broadcast
    (4095, 4097, 4160, 1, 0, 0, 4097),          # a padded result packed into rows of 4097
    (3, 5, 8, 1, 0, 0, 5),                      # 15 elements: a pair across rows, a last single
    (6, 7, 8, 2, 48, 0, 7),                     # a batch of such results (42 elements each)
])
def test_copy_every_element(lines, width, ld, matrices, step, offset, dst_ld):
    import cupy
    start = offset + max(0, -(matrices - 1) * step)          # matrix 0's first element
    extent = start + max(0, (matrices - 1) * step) + (lines - 1) * ld + width
    rng = np.random.default_rng(lines * 7 + width)
    host = rng.integers(0, 1 << 16, size=extent + 8, dtype=np.uint16)
    host[host == POISON] = 1
    src = cupy.asarray(host)
    got = _copy(src[start:], lines, width, ld, step, matrices, dst_ld)
    np.testing.assert_array_equal(got, _expected(host, lines, width, ld, step, matrices, start, dst_ld))


def test_copy_negative_line_stride():
    """Lines read bottom-up (a reversed view): the copy follows the stride wherever it points."""
    import cupy
    lines, width, ld = 50, 77, 80
    rng = np.random.default_rng(3)
    host = rng.integers(0, 1 << 15, size=lines * ld, dtype=np.uint16)
    src = cupy.asarray(host)
    got = _copy(src[(lines - 1) * ld:], lines, width, -ld, 0, 1, 80)
    want = np.zeros((lines, 80), dtype=np.uint16)
    for i in range(lines):
        want[i, :width] = host[(lines - 1 - i) * ld:(lines - 1 - i) * ld + width]
    np.testing.assert_array_equal(got[:-GUARD].reshape(lines, 80), want)


def test_reversed_view_through_matmul():
    """A cupy operand with a negative row stride is copied and multiplies right."""
    import cupy

    import gemm
    rng = np.random.default_rng(9)
    a = (rng.standard_normal((96, 130)) / 130 ** 0.25).astype(np.float16)
    b = (rng.standard_normal((130, 72)) / 130 ** 0.25).astype(np.float16)
    got = gemm.matmul(cupy.asarray(a)[::-1], cupy.asarray(b)).get().astype(np.float64)
    want = a[::-1].astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 2e-3


@pytest.mark.parametrize("m, n, k, batch", [(4095, 4097, 4099, 1), (300, 517, 256, 1), (33, 1001, 128, 4),
                                            (1, 13, 64, 1), (77, 9, 40, 3)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_odd_rows_of_c_through_a_staged_result(m, n, k, batch, dtype):
    """N not a multiple of 8: a TMA-store schedule writes a padded stand-in of C and the copy
    packs it into C (fresh, and out= with a guard after it), every element checked."""
    import torch

    import gemm
    from gemm.schedule import from_spec
    g = torch.Generator(device="cuda").manual_seed(m + n)
    dt = getattr(torch, dtype)
    lead = (batch,) if batch > 1 else ()
    a = (torch.randn(lead + (m, k), generator=g, device="cuda") * k ** -0.25).to(dt)
    b = (torch.randn(n, k, generator=g, device="cuda") * k ** -0.25).to(dt).t()
    want = a.double() @ b.double()
    buffer = torch.full((batch * m * n + GUARD,), float("nan"), device="cuda", dtype=dt)
    out = buffer[:batch * m * n].view(lead + (m, n))
    for sched in (from_spec("v7"), None):
        c = gemm.matmul(a, b, schedule=sched)
        gemm.matmul(a, b, schedule=sched, out=out)
        for got in (c, out):
            err = float(torch.linalg.norm(got.double() - want) / torch.linalg.norm(want))
            assert err < 5e-3, (sched, err)
        assert torch.isnan(buffer[batch * m * n:]).all()


@pytest.mark.parametrize("m, n, k", [(300, 517, 259), (64, 1001, 128), (96, 128, 333)])
@pytest.mark.parametrize("spec", [None, "v7"])
def test_copying_calls_replay_with_fresh_inputs(m, n, k, spec):
    """A call that copies (K not a multiple of 8, or N under a TMA-store schedule) is replayed
    on its second run: the copies run again, so inputs changed in place between calls give the
    new product, into a fresh C and into out= alike."""
    import torch

    import gemm
    from gemm import api
    from gemm.schedule import from_spec
    schedule = from_spec(spec) if spec else None
    g = torch.Generator(device="cuda").manual_seed(k)
    a = (torch.randn(m, k, generator=g, device="cuda") * k ** -0.25).half()
    b = (torch.randn(n, k, generator=g, device="cuda") * k ** -0.25).half().t()
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    for step in range(3):
        if step:
            a.mul_(-1.5)
            b.add_(0.25)
        want = a.double() @ b.double()
        for got in (gemm.matmul(a, b, schedule=schedule), gemm.matmul(a, b, schedule=schedule, out=out)):
            err = float(torch.linalg.norm(got.double() - want) / torch.linalg.norm(want))
            assert err < 5e-3, (step, err)
    ran = schedule or gemm.plan(a, b).schedule
    copies = k % 8 != 0 or (n % 8 != 0 and ran.stores_via_tma and not ran.swap_ab)
    repeat = api._REPEATS.get(api._signature(a, b, None, None, None, schedule))
    assert isinstance(repeat, api._RepeatWithCopies) == copies, (ran.name, type(repeat))
