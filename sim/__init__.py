"""A SimPy model of one Hopper GEMM kernel's pipeline (TMA, tensor cores, barriers).

    >>> import sim
    >>> from gemm.schedule import preset
    >>> p = sim.predict(preset("v2"), 8192, 8192, 8192, gpu="h100-sxm")
    >>> p.tflops, p.utilization, p.ctas_per_sm, p.bound

The core (read these first): hardware.py (the profile: every parameter with its source),
engines.py (the SM's engines, occupancy, the grid and its bytes), schedules.py (the warp
roles as SimPy processes), model.py (predict), call.py (what a timing of one call sees);
fast.py (the same with the SM's steady state in closed form) and rank.py (`sim.rank`, the
dispatcher's ordering of candidate schedules).
Behind one argument each: reuse.py (`reuse=`: how many bytes come from HBM: per-wave, the
convoy replay of convoy.py/l2cache.py, the grid timeline of timeline.py) and clock.py
(`clock=`: the profile's clock or the one a schedule earns).

API: `predict(schedule, m, n, k, gpu="h200-sxm", dtype="float16", batch=1, reuse="convoy",
clock="profile") -> Prediction`, `Prediction.to_dict()`, `fast_predict(...)`,
`rank(candidates, m, n, k, batch=1, dtype="float16", gpu="h200-sxm") -> [(schedule, ms)]`,
`load_profile(name)`, `PROFILES`.
Imports nothing GPU-related. Command line: `python -m sim.run --help`.
"""
from .fast import fast_predict
from .hardware import PROFILES, GpuProfile, load_profile
from .model import Prediction, predict
from .rank import rank
from .schedules import model_schedule

# bumped when a change to the model moves predictions (the predictions files record it)
MODEL_VERSION = "2026.12-host-1"

__all__ = ["predict", "fast_predict", "rank", "Prediction", "load_profile", "PROFILES", "GpuProfile",
           "model_schedule", "MODEL_VERSION"]
