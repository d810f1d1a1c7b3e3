"""sim.rank: candidate schedules for one shape, fastest first, by the fast path (sim/fast.py).

    >>> import sim
    >>> from gemm.schedule import PRESETS
    >>> sim.rank(list(PRESETS.values()), 4096, 4096, 4096)[0]   # (schedule, predicted ms)

The time ranked is one call as a CUDA-event timing sees it (host + device, sim/call.py), so
split-K's partials and their sum, or an operand copy, count against its candidate. Candidates that cannot
run on the GPU (ScheduleError: no CTA fits) are left out. Results are cached per (schedule,
shape, dtype, profile) in the process; a cold call costs about a third of a millisecond per
candidate on one core. `full=True` ranks with sim.predict instead (tens of ms a candidate).
"""
from __future__ import annotations

from gemm.schedule import Schedule, ScheduleError

from .fast import fast_predict
from .hardware import GpuProfile, load_profile

_PROFILES: dict = {}
_RESULTS: dict = {}
_RESULTS_MAX = 65536


def _profile(gpu: str | GpuProfile) -> GpuProfile:
    if isinstance(gpu, GpuProfile):
        return gpu
    if gpu not in _PROFILES:
        _PROFILES[gpu] = load_profile(gpu)
    return _PROFILES[gpu]


def rank(candidates, m: int, n: int, k: int, batch: int = 1, dtype: str = "float16",
         gpu: str | GpuProfile = "h200-sxm", host_us: float | None = None,
         full: bool = False, line_pitch: tuple[int, int] | None = None) -> list[tuple[Schedule, float]]:
    """[(schedule, predicted ms of one call)], fastest first (ties keep the candidates' order).
    The time is the call's host work and its device time one after the other (sim/call.py's
    serial_ms): it orders candidates as their device times do, where the events' host floor
    (timed_ms) would call every small candidate equal. `line_pitch` as predict's."""
    prof = _profile(gpu)
    out = []
    for i, s in enumerate(candidates):
        key = (s, m, n, k, batch, dtype, prof.name if isinstance(gpu, str) else repr(prof), host_us, full, line_pitch)
        ms = _RESULTS.get(key)
        if ms is None:
            try:
                if full:
                    from .model import predict
                    ms = predict(s, m, n, k, gpu=prof, dtype=dtype, batch=batch, host_us=host_us,
                                 line_pitch=line_pitch).call["serial_ms"]
                else:
                    ms = fast_predict(s, m, n, k, gpu=prof, dtype=dtype, batch=batch, host_us=host_us,
                                      line_pitch=line_pitch).call["serial_ms"]
            except ScheduleError:
                ms = float("inf")
            if len(_RESULTS) >= _RESULTS_MAX:
                _RESULTS.clear()
            _RESULTS[key] = ms
        if ms != float("inf"):
            out.append((i, s, ms))
    out.sort(key=lambda t: (t[2], t[0]))
    return [(s, ms) for _, s, ms in out]
