"""gemm.autotune: time the best-ranked candidate schedules on the caller's own operands and
keep the fastest, on disk, for every later call of that shape.

The cache is one small JSON file per (GPU, shape, dtype, majorness) under
$HOPPER_GEMM_CACHE/autotune (default ~/.cache/hopper-gemm/autotune). Each file records
what it was measured with: the GPU, its driver and the digest of the kernel sources. A file
that does not parse, or that was measured with other kernels or another driver, is ignored
with a warning and measured again. Files are written whole and renamed into place, so two
processes tuning at once leave one complete file (the last), never a torn one.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

ENV_SWITCH = "HOPPER_GEMM_AUTOTUNE"   # "1": matmul tunes a shape the cache does not hold yet


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "") not in ("", "0")


def cache_dir() -> Path:
    from ..compile import _cache_dir
    return _cache_dir() / "autotune"


@dataclass(frozen=True)
class Key:
    gpu: str
    driver: str
    kernels: str          # digest of the kernel sources (gemm.compile.KERNEL_SOURCES)
    m: int
    n: int
    k: int
    batch: int
    dtype: str
    a_major: str
    b_major: str

    def path(self) -> Path:
        shape = f"{self.gpu}|{self.m}|{self.n}|{self.k}|{self.batch}|{self.dtype}|{self.a_major}|{self.b_major}"
        return cache_dir() / (hashlib.sha256(shape.encode()).hexdigest()[:24] + ".json")

    def fields(self) -> dict:
        return dict(self.__dict__)


def lookup(key: Key) -> dict | None:
    """The cached entry for this key, or None (missing, corrupt or stale: warned)."""
    path = key.path()
    try:
        entry = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        warnings.warn(f"autotune cache entry {path} is unreadable ({exc.__class__.__name__}): ignored; "
                      "the shape will be tuned again", RuntimeWarning, stacklevel=3)
        return None
    if not isinstance(entry, dict) or entry.get("key") != key.fields() or "schedule" not in entry:
        if isinstance(entry, dict) and isinstance(entry.get("key"), dict):
            changed = sorted(f for f, v in key.fields().items() if entry["key"].get(f) != v)
            why = f"measured with another {', '.join(changed)}"
        else:
            why = "not an autotune entry"
        warnings.warn(f"autotune cache entry {path} is stale ({why}): ignored; the shape will be tuned again",
                      RuntimeWarning, stacklevel=3)
        return None
    return entry


def store(key: Key, entry: dict) -> Path:
    """Write the entry atomically: a temporary file in the same folder, renamed into place."""
    path = key.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({"key": key.fields(), **entry}, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def time_calls(run, stream_handle: int, warmup: int = 3, iters: int = 10) -> float:
    """Median milliseconds of `run()` on the stream, CUDA events around each call."""
    import cupy

    from ..workspace import cupy_stream
    stream = cupy_stream(stream_handle)
    for _ in range(warmup):
        run()
    events = []
    for _ in range(iters):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        run()
        end.record(stream)
        events.append((start, end))
    end.synchronize()
    return statistics.median(cupy.cuda.get_elapsed_time(s, e) for s, e in events)
