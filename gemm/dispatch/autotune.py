"""gemm.autotune: time the best-ranked candidate schedules on the caller's own operands and
keep the fastest, on disk, for every later call of that shape.

Each candidate's calls are timed back to back behind a stream held until the host has queued
them (gemm.hold), in rounds whose order turns: the device's time per call. Timed one call at a
time between events, a small product's call is mostly the host's preparation (60-120 us around a
kernel of 15-30), and the fastest by that measure is often not the fastest kernel. Entries timed
another way (an older `TIMING`) are stale and tuned again.

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
TIMING = "back to back, stream held"   # how the entries' times were taken (part of the key)


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
    timing: str = TIMING

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


# The stream is held (gemm.hold) HOLD_MARGIN times as long as the warm-up says queueing the timed
# calls takes, at most HOLD_MAX_US; each candidate is timed in ROUNDS rounds whose order turns, so
# that none meets a clock the others have not (the power limit pulls it down under load).
HOLD_MARGIN = 2.0
HOLD_MAX_US = 50_000
ROUNDS = 3


def back_to_back_ms(run, stream_handle: int, calls: int = 20, warmup: int = 3) -> float:
    """Milliseconds per call of `run()`, `calls` calls queued back to back between one pair of
    CUDA events, the stream held until the host has queued them: the device's time per call."""
    import time

    import cupy

    from ..hold import hold_stream
    from ..workspace import cupy_stream
    stream = cupy_stream(stream_handle)
    host_s = []
    for _ in range(warmup):
        t0 = time.perf_counter()
        run()
        host_s.append(time.perf_counter() - t0)
    stream.synchronize()
    hold_stream(stream_handle, min(HOLD_MARGIN * calls * statistics.median(host_s) * 1e6, HOLD_MAX_US))
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record(stream)
    for _ in range(calls):
        run()
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / calls


def time_candidates(runs: dict, stream_handle: int, rounds: int = ROUNDS, progress=None) -> dict:
    """{name: milliseconds per call}: each of `runs` ({name: run}) timed back to back
    (back_to_back_ms) in `rounds` rounds whose order turns; the median of its rounds.
    `progress(name)`, if given, is called after each timing."""
    names = list(runs)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(back_to_back_ms(runs[name], stream_handle))
            if progress is not None:
                progress(name)
    return {name: statistics.median(v) for name, v in times.items()}
