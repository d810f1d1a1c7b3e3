"""gemm.matmul: `a @ b` on the project's own Hopper kernels; gemm.plan says which schedule a
call runs and why; gemm.autotune times the candidates on the caller's operands.

Inputs may be CuPy arrays, PyTorch CUDA tensors (through their pointers, so
bf16 works although CuPy has no bf16) or NumPy arrays (copied to the GPU and
back); the result is of the same kind. Operands may be transposed views: a
matrix whose columns are contiguous is handed to WGMMA as MN-major instead of
being copied. 3-D operands are batches of matrices, with NumPy's broadcasting of a
2-D operand (or a batch of one) against the other's batch. Everything is checked
before anything is launched or written.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .kernels.config import DTYPES
from .limits import line_start, tma_addressable
from .packed import PackedWeights, packed_operand
from .schedule import INPUT_BYTES, KernelGapError, Schedule, kernel_gaps, preset


@dataclass
class _Matrix:
    """An operand as the kernels see it: a 2-D matrix or a 3-D batch of them, with a device
    address and strides in elements."""
    kind: str            # "numpy", "cupy" or "torch"
    array: object
    shape: tuple
    strides: tuple       # elements
    dtype: str
    address: int = 0     # device address (numpy: filled in after the copy)
    device_id: int = -1  # -1: host
    packed: bool = False  # weights packed by gemm.pack_weights: `array` is the PackedWeights

    @property
    def batch(self) -> int:
        return self.shape[0] if len(self.shape) == 3 else 1

    @property
    def matrix(self) -> tuple:
        """(rows, cols, row stride, col stride) of one matrix."""
        return (*self.shape[-2:], *self.strides[-2:])


_DTYPE_NAMES: dict = {}


def _dtype_name(dt) -> str:
    # str(numpy dtype) costs microseconds; this runs on every call
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = str(dt).replace("torch.", "")
    return name


def _describe(x, name):
    if isinstance(x, PackedWeights):
        if name != "b":
            raise TypeError(f"{name} is packed weights: gemm.matmul takes them as b (a @ b)")
        # it stands for b [K, N] read K-contiguous, as a weight W [N, K] passed as W.T
        return _Matrix(x.kind, x, x.shape, (1, x.k), x.dtype, x.address, x.device_id, packed=True)
    mod = type(x).__module__.split(".")[0]
    if mod == "numpy" or isinstance(x, np.ndarray):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{name} must be an array, got {type(x).__name__}")
        itemsize = x.dtype.itemsize
        return _Matrix("numpy", x, x.shape, tuple(s // itemsize for s in x.strides), _dtype_name(x.dtype))
    if mod == "cupy":
        itemsize = x.dtype.itemsize
        return _Matrix("cupy", x, x.shape, tuple(s // itemsize for s in x.strides), _dtype_name(x.dtype),
                       x.data.ptr, x.device.id)
    if mod == "torch":
        if not x.is_cuda:
            raise ValueError(f"{name} is a PyTorch tensor on {x.device}; pass CUDA tensors "
                             "(tensor.cuda()) or NumPy arrays")
        return _Matrix("torch", x, tuple(x.shape), tuple(x.stride()), _dtype_name(x.dtype),
                       x.data_ptr(), x.device.index)
    raise TypeError(f"{name} must be a NumPy array, a CuPy array or a PyTorch CUDA tensor, "
                    f"got {type(x).__module__}.{type(x).__name__}")


def _majorness(mat: _Matrix):
    """('row' | 'col' | None, leading stride): which dimension of its matrices is contiguous."""
    rows, cols, row_stride, col_stride = mat.matrix
    if col_stride == 1 or cols == 1:
        return "row", row_stride if rows > 1 else cols
    if row_stride == 1 or rows == 1:
        return "col", col_stride if cols > 1 else rows
    return None, 0


def _explicit_schedule(stages, version, schedule) -> Schedule | None:
    """The schedule the caller named (schedule=, version=, stages=), checked; None if none."""
    if schedule is None and version is None and stages is None:
        return None
    if schedule is None:
        return _preset_schedule(stages, version)
    return _checked(schedule, stages, version)


@lru_cache(maxsize=64)
def _preset_schedule(stages, version) -> Schedule:
    return _checked(None, stages, version)


def _checked(schedule, stages, version) -> Schedule:
    if schedule is not None:
        if version is not None or stages is not None:
            raise ValueError("give either schedule= or version=/stages=, not both")
        if not isinstance(schedule, Schedule):
            raise TypeError(f"schedule must be a gemm.Schedule, got {type(schedule).__name__}")
        s = schedule.validated()
    elif version is not None:
        s = preset(version) if stages is None else preset(version, stages=stages)
    else:
        s = preset("v2", stages=stages)
    gaps = kernel_gaps(s)
    if gaps:
        raise KernelGapError(f"schedule {s.name!r} has no kernel yet: {'; '.join(gaps)}; "
                                  "python -m sim.run predicts it")
    return s


@lru_cache(maxsize=None)
def _kernel(schedule: Schedule, dtype: str, a_major: str, b_major: str, packed: str | None = None):
    from .kernels import KernelConfig
    from .launch import load_kernel
    return load_kernel(KernelConfig(schedule, dtype, a_major, b_major, packed=packed))




def _stream_handle(kind, device_id):
    if kind == "torch":
        return _torch_stream(device_id)
    import cupy
    return cupy.cuda.get_current_stream().ptr


def _torch_stream(device_id: int) -> int:
    """The current torch stream's handle: the raw getter where torch has it (a fraction of a
    microsecond; torch.cuda.current_stream builds a Stream object first)."""
    return _torch_stream_getter()(device_id)


@lru_cache(maxsize=1)
def _torch_stream_getter():
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw if raw is not None else (lambda device_id: torch.cuda.current_stream(device_id).cuda_stream)


def matmul(a, b, stages=None, *, version=None, schedule=None, out=None, weights=None):
    """`a @ b` for fp16/bf16 matrices (2-D) or batches of them (3-D, NumPy broadcasting),
    with fp32 accumulation, on our kernels.

    With no schedule named, the dispatcher picks one for the shape (`gemm.plan` says which
    and why). Or name one:
    stages   ring depth of the V2 kernel (stages=2 is the tutorial's V2)
    version  a preset: "v1" (serial), "v2" (ring), "v3".."v5" (warp-specialized), "v6" (the
             tutorial series' 256x256 fp16-accumulating kernel), "v7" (persistent, 128x256);
             stages= then overrides its depth
    schedule a full gemm.Schedule
    out      an array of the product's shape, a's dtype and kind, rows contiguous (and, for a
             batch, its matrices one after another), to write into
    b may also be `gemm.pack_weights(b)`: the same product, its weights read by one bulk copy
    per K tile (gemm/packed.py), on a schedule that can read them so.
    weights  "a" or "b": that operand holds weights that no kernel still running on the stream
             writes (the kernel ahead of this call in particular). A kernel launched as a
             programmatic dependent (v7 and the dispatcher's persistent picks) then loads its
             first K tiles of them before waiting for the kernel ahead to end, so back to back
             the HBM keeps streaming across the kernels' boundary (Schedule.preload). Wrong if
             the kernel ahead writes that operand: it may be read before it is written.

    Any M, N, K >= 1 (K = 0 gives zeros). Raises ValueError/TypeError for bad
    input before anything is written, gemm.launch.DeviceError without a Hopper GPU.
    """
    if weights not in (None, "a", "b"):
        raise ValueError(f"weights must be None, 'a' or 'b' (the operand no kernel still running writes), "
                         f"got {weights!r}")
    signature = _signature(a, b, out, stages, version, schedule, weights)
    repeat = _REPEATS.get(signature)
    if repeat is not None:           # the same call as before: only the launch runs
        return repeat(out)
    explicit = _explicit_schedule(stages, version, schedule)
    call = _operands(a, b, out)
    from .launch import device, launch_gemm, tma_storable
    dev = device()
    if call.A.kind != "numpy" and call.A.device_id != dev.device_id:
        raise ValueError(f"the inputs are on GPU {call.A.device_id}, the current device is {dev.device_id}")
    if explicit is not None:
        sched = explicit
    elif call.B.packed:
        sched = _dispatch_packed(*call.key, call.line_starts).schedule
    else:
        plan_ = _dispatch(*call.key, call.line_starts)
        if plan_.source != "autotune" and _autotune_enabled():
            plan_ = autotune(a, b)
        sched = plan_.schedule
    sched = with_weights(sched, weights)
    result, repeat = _run(sched, call, dev, launch_gemm, tma_storable)
    if signature is not None and repeat is not None:
        _remember(signature, repeat)
    return result


# A repeated call (the same operands, strides, output, stream and schedule request) replays
# its prepared launch: everything the first call checked and built depends only on these
# (and on the split-K workspace, which forgets them all when it moves). A call that copies
# unaligned rows keeps its padded buffers for the replay: at most _STAGING_MAX bytes of them
# over all the calls remembered.
_REPEATS: dict = {}
_REPEATS_MAX = 4096
_STAGING_MAX = 1 << 30
_staging_held = [0]


def _remember(signature, repeat) -> None:
    held = getattr(repeat, "staging_bytes", 0)
    if held > _STAGING_MAX:
        return
    if len(_REPEATS) >= _REPEATS_MAX or _staging_held[0] + held > _STAGING_MAX:
        _forget_repeats()
    _REPEATS[signature] = repeat
    _staging_held[0] += held


def _forget_repeats():
    _REPEATS.clear()
    _staging_held[0] = 0


def with_weights(schedule: Schedule, weights: str | None) -> Schedule:
    """`schedule` loading the operand `weights` names before its wait for the kernel ahead,
    where it is launched as a programmatic dependent (only such a launch waits); else as it is."""
    if weights is None or not schedule.dependent_launch:
        return schedule
    return schedule.replace(preload=weights)


def _signature(a, b, out, stages, version, schedule, weights=None):
    """What decides everything about a call but the output's address, or None (host arrays)."""
    module = type(a).__module__
    packed = isinstance(b, PackedWeights)
    if module == "torch":
        if type(b).__module__ != "torch" and not (packed and b.kind == "torch"):
            return None
        device = a.get_device()   # -1 on the CPU: such a call never ran, so it never matches
        o = (out.data_ptr(), out.shape, out.stride(), out.dtype) if out is not None else None
        b_key = (id(b), b.address) if packed else (b.data_ptr(), b.shape, b.stride(), b.dtype)
        return ("torch", a.data_ptr(), a.shape, a.stride(), a.dtype, device, b_key, o, _torch_stream(device),
                stages, version, id(schedule), weights)
    if module.startswith("cupy"):
        import cupy
        if packed and b.kind != "cupy":
            return None
        o = (out.data.ptr, out.shape, out.strides, out.dtype) if out is not None else None
        b_key = (id(b), b.address) if packed else (b.data.ptr, b.shape, b.strides, b.dtype)
        return ("cupy", a.data.ptr, a.shape, a.strides, a.dtype, a.device.id, b_key, o,
                cupy.cuda.get_current_stream().ptr, stages, version, id(schedule), weights)
    return None


class _Repeat:
    """A call's prepared launch, run again: a fresh output (or the same out=) and one launch.
    A TMA-store kernel needs the output's tensor map: the allocator hands out a few addresses
    over and over, so the maps are kept by address."""

    C_MAPS_MAX = 64

    def __init__(self, launch, schedule, allocate, c_map):
        self.launch, self.schedule = launch, schedule   # (the schedule kept alive: id() keys it)
        self.allocate, self.c_map = allocate, c_map
        self.c_maps: dict = {}

    def __call__(self, out):
        if out is not None:
            self.launch()
            return out
        result, address = self.allocate()
        if self.c_map is None:
            self.launch(address)
            return result
        c_map = self.c_maps.get(address)
        if c_map is None:
            if len(self.c_maps) >= self.C_MAPS_MAX:
                self.c_maps.clear()
            c_map = self.c_maps[address] = self.c_map(address)
        self.launch(address, c_map)
        return result


class _RepeatWithCopies(_Repeat):
    """A replay that copies too: the operands' unaligned rows into the padded buffers it keeps
    (`before`), then the GEMM, then (`after`) the padded stand-in of C into C, whose address
    is the copy's destination (argument 3, as C is the GEMM's)."""

    def __init__(self, launch, schedule, allocate, c_map, before, after, buffers):
        super().__init__(launch, schedule, allocate, c_map)
        self.before, self.after, self.buffers = tuple(before), after, buffers
        self.staging_bytes = sum(buf.nbytes for buf in buffers)

    def __call__(self, out):
        for copy in self.before:
            copy()
        if self.after is None:
            return super().__call__(out)
        self.launch()
        if out is not None:
            self.after()
            return out
        result, address = self.allocate()
        self.after(address)
        return result


def plan(a, b, stages=None, *, version=None, schedule=None):
    """Which schedule `matmul(a, b, ...)` would run, and why: a `gemm.dispatch.Plan` whose
    `source` is "explicit" (named by the caller), "autotune", "table", "model" or "default"."""
    from .dispatch import Plan
    explicit = _explicit_schedule(stages, version, schedule)
    call = _operands(a, b, None)
    if explicit is not None:
        return Plan(explicit, "explicit", "named by the caller")
    if call.B.packed:
        return _dispatch_packed(*call.key, call.line_starts)
    return _dispatch(*call.key, call.line_starts)


def autotune(a, b, *, top=3, other_tiles=None, force=False):
    """Time the `top` best-ranked candidate schedules (the table's choice, then the model's
    order) and the best-ranked of `other_tiles` other tiles (default
    gemm.dispatch.AUTOTUNE_OTHER_TILES; gemm.dispatch.tuning_candidates) on these operands,
    keep the fastest on disk for this GPU, shape, dtype and majorness, and return its Plan.
    Later calls of the shape (in any process) run it.
    With `force`, tune again even if the cache holds the shape. The environment switch
    HOPPER_GEMM_AUTOTUNE=1 makes matmul do this for every shape it has not tuned."""
    import datetime

    from tqdm import tqdm

    from .dispatch import AUTOTUNE_OTHER_TILES, tuning_candidates
    from .dispatch.autotune import ROUNDS, store, time_candidates
    from .launch import device, launch_gemm, tma_storable
    if isinstance(b, PackedWeights):
        raise TypeError("autotune times the weights as they are, not packed: pass b itself (a call "
                        "with its packed weights then runs the tuned schedule where it can read them)")
    call = _operands(a, b, None)
    if call.A.kind == "numpy":    # tune on the device, where the product runs
        import cupy
        return autotune(cupy.asarray(a), cupy.asarray(b), top=top, other_tiles=other_tiles, force=force)
    dev = device()
    if not force:
        current = _dispatch(*call.key, call.line_starts)
        if current.source == "autotune":
            return current
    key = _tune_key(*call.key)
    m, n, k, batch, dtype = call.key[:5]
    chosen = tuning_candidates(m, n, k, batch, dtype, key.gpu, top=top,
                               other_tiles=AUTOTUNE_OTHER_TILES if other_tiles is None else other_tiles)
    stream = _stream_handle(call.A.kind, dev.device_id)
    runs, reference = {}, None
    with tqdm(total=len(chosen) * (1 + ROUNDS), desc=f"autotune {m}x{n}x{k}", leave=False) as bar:
        for s in chosen:   # each built, run once and checked against the first; then all timed
            result, _ = _run(s, call, dev, launch_gemm, tma_storable)
            reference = result if reference is None else reference
            agrees = result is reference or _close(result, reference, call.A.kind)
            bar.update(1 if agrees else 1 + ROUNDS)
            if agrees:   # a candidate that disagrees with the first is never kept
                runs[s.name] = lambda s=s: _run(s, call, dev, launch_gemm, tma_storable)
        timed = time_candidates(runs, stream, progress=lambda _: bar.update(1))
    best = min(timed, key=timed.get)
    store(key, {"schedule": best, "timed_ms": timed,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
    _dispatch.cache_clear()
    _forget_repeats()
    return _dispatch(*call.key, call.line_starts)


def _close(x, y, kind) -> bool:
    """Whether two results of one product agree (candidates are checked against the first)."""
    import cupy
    if kind == "torch":
        x, y = (cupy.from_dlpack(v.float()) for v in (x, y))
    else:   # cupy holds bf16 results as raw uint16: compare fp16 ones only
        if x.dtype != cupy.float16:
            return True
        x, y = x.astype(cupy.float32), y.astype(cupy.float32)
    return bool(cupy.linalg.norm(x - y) <= 1e-2 * (cupy.linalg.norm(y) + 1e-30))


def _autotune_enabled() -> bool:
    from .dispatch.autotune import enabled
    return enabled()


def _tune_key(m, n, k, batch, dtype, a_major, b_major):
    from .compile import _source_digest
    from .dispatch.autotune import Key
    from .launch import gpu_identity
    profile, name, driver = gpu_identity()
    return Key(profile, driver, _source_digest(), m, n, k, batch, dtype, a_major, b_major)


@lru_cache(maxsize=1024)
def _dispatch(m, n, k, batch, dtype, a_major, b_major, line_starts=("line", "line")):
    """The dispatcher's plan for a shape (and where its operands' lines start), once per
    process (a repeated call pays a dict lookup)."""
    from .dispatch import choose
    from .dispatch.autotune import lookup
    try:
        key = _tune_key(m, n, k, batch, dtype, a_major, b_major)
        gpu, tuned = key.gpu, lookup(key)
    except Exception:   # no GPU: plan() still answers, for the H200
        gpu, tuned = "h200-sxm", None
    return choose(m, n, k, batch, dtype, gpu=gpu, tuned=tuned, line_starts=line_starts)


@lru_cache(maxsize=1024)
def _dispatch_packed(m, n, k, batch, dtype, a_major, b_major, line_starts=("line", "line")):
    """The dispatcher's plan for a product with packed weights: its plain plan where that
    schedule can read them, else the best of the candidates that can."""
    from .dispatch import choose_packed
    return choose_packed(_dispatch(m, n, k, batch, dtype, a_major, b_major, line_starts), m, n, k, batch, dtype)


@dataclass
class _Call:
    """A checked product: operands, output, and its shape."""
    A: _Matrix
    B: _Matrix
    O: _Matrix | None
    m: int
    n: int
    k: int
    batch: int
    batched_output: bool     # the result has a batch dimension (an input had one)

    @property
    def line_starts(self) -> tuple[str, str]:
        """Where A's and B's lines, as the kernel reads them, start (gemm.limits.LINE_STARTS;
        gemm.dispatch.choose weighs what lines off 128 bytes cost)."""
        return _line_start(self.A), _line_start(self.B)

    @property
    def key(self) -> tuple:
        """(m, n, k, batch, dtype, a_major, b_major): what the dispatcher decides by."""
        a_order, _ = _majorness(self.A)
        b_order, _ = _majorness(self.B)
        return (self.m, self.n, self.k, self.batch, self.A.dtype,
                "mn" if a_order == "col" else "k", "k" if b_order == "col" else "mn")


def _line_start(mat: _Matrix) -> str:
    """Where an operand read in place has its lines start (gemm.limits.line_start of its base
    and its line pitch); one copied first (gemm.padding: host arrays, lines TMA cannot address)
    gets lines 128 bytes apart."""
    major, ld = _majorness(mat)
    if mat.kind == "numpy" or mat.packed or major is None or not tma_addressable(mat.address, ld):
        return "line"
    rows, cols = mat.shape[-2:]
    lines = rows if major == "row" else cols
    return line_start(mat.address, ld * INPUT_BYTES if lines > 1 else 0)


def _operands(a, b, out) -> _Call:
    """The checked product; errors name what is wrong and what is accepted."""
    A, B = _describe(a, "a"), _describe(b, "b")
    for mat, name in ((A, "a"), (B, "b")):
        if len(mat.shape) not in (2, 3):
            raise ValueError(f"{name} must be a 2-D matrix or a 3-D batch of matrices, got "
                             f"{len(mat.shape)}-D shape {mat.shape}")
    if A.kind != B.kind:
        raise TypeError(f"a is a {A.kind} array and b a {B.kind} array: pass both from the same "
                        "library (the result is returned as that kind)")
    if A.dtype != B.dtype:
        raise TypeError(f"a is {A.dtype} and b is {B.dtype}: both must have the same dtype, "
                        f"one of {DTYPES}")
    if A.dtype not in DTYPES:
        raise TypeError(f"dtype {A.dtype} is not supported: the kernels take {' or '.join(DTYPES)}")
    (m, k), (k2, n) = A.shape[-2:], B.shape[-2:]
    if k != k2:
        raise ValueError(f"inner dimensions differ: a is {A.shape} and b is {B.shape} "
                         f"(a's columns must equal b's rows)")
    batch = max(A.batch, B.batch)
    if {A.batch, B.batch} - {1, batch}:
        raise ValueError(f"batch dimensions do not broadcast: a is {A.shape} and b is {B.shape} "
                         "(equal batches, or one of them 1 or absent)")
    batched_output = len(A.shape) == 3 or len(B.shape) == 3
    if A.kind != "numpy" and A.device_id != B.device_id:
        raise ValueError(f"a is on GPU {A.device_id} and b on GPU {B.device_id}: both must be on one GPU")
    O = None
    if out is not None:
        O = _describe(out, "out")
        want = (batch, m, n) if batched_output else (m, n)
        if O.kind != A.kind:
            raise TypeError(f"out is a {O.kind} array but the inputs are {A.kind}")
        if tuple(O.shape) != want:
            raise ValueError(f"out has shape {tuple(O.shape)}; the product needs {want}")
        if O.dtype != A.dtype:
            raise TypeError(f"out is {O.dtype}; the product is {A.dtype}")
        if O.kind != "numpy" and O.device_id != A.device_id:
            raise ValueError(f"out is on GPU {O.device_id}, the inputs on GPU {A.device_id}")
        if n > 1 and O.strides[-1] != 1:
            raise ValueError(f"out must have contiguous rows (column stride 1), got strides {O.strides} elements")
        if batched_output and batch > 1 and O.strides[0] != m * (O.strides[1] if m > 1 else n):
            raise ValueError(f"out's matrices must follow one another (batch stride = rows x row stride), "
                             f"got strides {O.strides} elements")
        if O.kind != "numpy" and _overlaps(O, A, B):
            raise ValueError("out overlaps an input: the kernels would read what they already wrote; "
                             "pass a separate output array")
    return _Call(A, B, O, m, n, k, batch, batched_output)


def _overlaps(O: _Matrix, *inputs: _Matrix) -> bool:
    """Whether out's bytes may share memory with an input's (their address ranges meet)."""
    def extent(mat):
        last = sum((d - 1) * st for d, st in zip(mat.shape, mat.strides) if d > 0)
        return mat.address, mat.address + 2 * (last + 1)
    o0, o1 = extent(O)
    return any(i0 < o1 and o0 < i1 for i0, i1 in map(extent, inputs))


def _run(sched, call: _Call, dev, launch_gemm, tma_storable):
    import cupy
    A, B, O, m, n, k, batch = call.A, call.B, call.O, call.m, call.n, call.k, call.batch
    # Copies made below must live until the launch is queued (this function's end):
    # freed earlier, CuPy's pool would hand their memory to the next allocation (the
    # other operand's copy, or C) before the kernel reads them. After the launch,
    # stream order makes reuse safe.
    copies = []
    before = []          # the prepared copies of operands into padded lines, for a replay
    replayable = A.kind != "numpy"

    def on_device(mat: _Matrix):
        """(address, 'row'|'col', leading stride, batch step) of a TMA-addressable device copy;
        the step is 0 for an operand broadcast over the batch."""
        major, ld = _majorness(mat)
        if mat.packed:              # the buffer's address: the kernel reads no map of it
            return mat.address, "col", mat.shape[0], 0
        step = mat.strides[0] if mat.batch > 1 else 0
        aligned = major is not None and tma_addressable(mat.address, ld, step)
        if mat.kind != "numpy" and aligned:
            return mat.address, major, ld, step
        rows, cols = mat.shape[-2:]
        if mat.kind != "numpy" and major is not None:
            # Lines (rows, or columns of a column-major matrix) of contiguous elements: copied
            # into lines 128 bytes apart, keeping the majorness, on the call's stream
            # (gemm/padding.py: the driver's pitched copy is about half as fast).
            from .padding import LineCopy, launch_copy, pitch_for
            lines, width = (rows, cols) if major == "row" else (cols, rows)
            pitch = pitch_for(width)
            lead = mat.shape[:-2] if mat.batch > 1 else ()
            buf = cupy.empty(lead + (lines, pitch), dtype=cupy.uint16)
            before.append(launch_copy(LineCopy(mat.address, ld, step, buf.data.ptr, pitch, lines, width, mat.batch),
                                      stream))
            copies.append(buf)
            return buf.data.ptr, major, pitch, (lines * pitch if lead else 0)
        # Otherwise copy to row-major device matrices whose rows are 128 bytes apart.
        nonlocal replayable
        replayable = False
        from .padding import pitch_for
        padded = pitch_for(cols)
        lead = mat.shape[:-2] if mat.batch > 1 else ()
        if mat.kind == "numpy":
            host = np.zeros(lead + (rows, padded), dtype=np.uint16)
            host[..., :cols] = mat.array.view(np.uint16).reshape(lead + (rows, cols))
            buf = cupy.asarray(host)
        else:
            buf = cupy.empty(lead + (rows, padded), dtype=cupy.uint16)
            src = (cupy.from_dlpack(mat.array.view(_torch_u16())) if mat.kind == "torch"
                   else mat.array.view(cupy.uint16))
            buf[..., :cols] = src.reshape(lead + (rows, cols))
        copies.append(buf)
        return buf.data.ptr, "row", padded, (rows * padded if lead else 0)

    stream = _stream_handle(A.kind, dev.device_id)
    # A batch of A against one B whose rows run on from matrix to matrix is one product with
    # batch x M rows (a linear layer applied to a batch of sequences).
    fold = (batch > 1 and B.batch == 1 and A.batch > 1 and _majorness(A)[0] == "row"
            and A.strides[0] == m * A.strides[1])
    a_addr, a_order, lda, a_step = on_device(A)
    b_addr, b_order, ldb, b_step = on_device(B)
    # an operand copied into padded lines is the copy kernel's output, the kernel just ahead
    if {"a": a_addr != A.address, "b": b_addr != B.address}.get(sched.preload, False):
        sched = sched.replace(preload="none")
    # A row-major [M, K] is K-major; B row-major [K, N] is N-major (MN).
    a_major = "k" if a_order == "row" else "mn"
    b_major = "mn" if b_order == "row" else "k"

    # result buffer: [batch, m, n] (or [m, n]), rows n apart, matrices m x n apart
    shape = (batch, m, n) if call.batched_output else (m, n)
    allocate = _allocator(A, shape)
    if O is not None and O.kind != "numpy":
        result, c_addr = O.array, O.address
        ldc = O.strides[-2] if m > 1 else n
    else:
        (result, c_addr), ldc = allocate(), n

    if k == 0 or m == 0 or n == 0 or batch == 0:
        _zero(result, A.kind)
        return _returned(result, A, O), None
    if fold:
        m, batch, a_step = m * batch, 1, 0
    if batch > 1 and not (sched.family == "specialized" and sched.producer_warps == 4):
        raise KernelGapError(f"schedule {sched.name!r}: batched products run on the producer-warpgroup "
                             "kernels (v6, v7 and their variations)")
    staged = None   # C's TMA-addressable stand-in, copied into C after the GEMM
    if sched.stores_via_tma and not tma_storable(c_addr, ldc):
        if _stageable(c_addr, ldc, m, n, batch) and not sched.swap_ab:
            # TMA stores into rows 128 bytes apart, which a copy then packs into C: far faster
            # than the registers' 2-byte stores into rows of an odd length
            from .padding import pitch_for
            final_c, ldc = c_addr, pitch_for(n)
            staged = cupy.empty((batch, m, ldc), dtype=cupy.uint16)
            copies.append(staged)
            c_addr = staged.data.ptr
        else:
            sched = _direct_epilogue(sched)   # TMA cannot address C's rows: store from registers
    if sched.swap_ab:
        # C^T = B^T A^T: B^T [N, K] is the kernel's A and A^T [K, M] its B, each K-contiguous
        # exactly where the operand it is a view of was; the kernel writes C^T into C transposed
        if batch > 1:
            raise KernelGapError(f"schedule {sched.name!r}: swap_ab runs one product at a time (2-D, or a "
                                 "batch of A against one B, which folds into rows)")
        loaded = _kernel(sched, A.dtype, b_major, a_major, packed_operand(sched) if B.packed else None)
        launch = launch_gemm(loaded, b_addr, ldb, a_addr, lda, c_addr, ldc, n, m, k, stream)
    else:
        loaded = _kernel(sched, A.dtype, a_major, b_major, packed_operand(sched) if B.packed else None)
        launch = launch_gemm(loaded, a_addr, lda, b_addr, ldb, c_addr, ldc, m, n, k, stream,
                             batch=batch, a_step=a_step, b_step=b_step)
    after = None
    if staged is not None:
        from .padding import LineCopy, launch_copy
        after = launch_copy(LineCopy(c_addr, ldc, m * ldc, final_c, n, m, n, batch), stream)
    repeat = None
    if replayable:   # operands read in place or through prepared copies: the launches can be replayed
        from .workspace import on_move
        on_move(_forget_repeats)
        from .launch import c_tensor_map
        cfg = loaded.config
        c_map = (lambda c: c_tensor_map(cfg, c, n, m, n, batch)) if (cfg.c_layout is not None and O is None
                                                                       and staged is None) else None
        if copies:
            repeat = _RepeatWithCopies(launch, sched, allocate, c_map, before, after, copies)
        else:
            repeat = _Repeat(launch, sched, allocate, c_map)
    return _returned(result, A, O), repeat


def _allocator(A: _Matrix, shape):
    """A function making the result array: (array, device address)."""
    if A.kind == "torch":
        # empty_like of a one-element tensor of the operand's dtype and device expanded to the
        # result's shape: a fresh contiguous tensor (an expanded template is not dense, so its
        # strides are not copied), with no size list to parse: about 1 us less than new_empty
        # or torch.empty with dtype= and device=. It keeps no reference to the operand.
        import torch
        template = A.array.new_empty(1).expand(shape)
        empty_like = torch.empty_like
        if not empty_like(template).is_contiguous():   # not so in some torch: the plain way
            template, empty_like = A.array.new_empty(0), (lambda t: t.new_empty(shape))

        def allocate():
            r = empty_like(template)
            return r, r.data_ptr()
        return allocate
    import cupy
    dtype = cupy.float16 if A.dtype == "float16" else cupy.uint16

    def allocate():
        r = cupy.empty(shape, dtype=dtype)
        return r, r.data.ptr
    return allocate


def _stageable(c: int, ldc: int, m: int, n: int, batch: int) -> bool:
    """Whether C can be written through a padded stand-in and a copy: its rows follow one
    another (ldc = n, or one row), 4-byte aligned, every matrix of a batch too."""
    return (ldc == n or m == 1) and c % 4 == 0 and (batch == 1 or (m * n) % 2 == 0)


@lru_cache(maxsize=64)
def _direct_epilogue(sched: Schedule) -> Schedule:
    return sched.replace(epilogue="direct")


def _returned(result, A, O):
    """The result as the caller's kind: a NumPy call gets its product back on the host."""
    if A.kind == "numpy":
        host = result.get().view(A.array.dtype)
        if O is not None:
            O.array[...] = host
            return O.array
        return host
    return result


def _zero(result, kind):
    if kind == "torch":
        result.zero_()
    else:
        result.fill(0)


def _torch_u16():
    import torch
    return torch.uint16 if hasattr(torch, "uint16") else torch.int16
