"""A SimPy model of one Hopper GEMM kernel's pipeline (TMA, tensor cores, barriers).

    >>> import sim
    >>> from gemm.schedule import preset
    >>> p = sim.predict(preset("v2"), 8192, 8192, 8192, gpu="h100-sxm")
    >>> p.tflops, p.utilization, p.ctas_per_sm, p.bound

API: `predict(schedule, m, n, k, gpu="h200-sxm", dtype="float16", reuse="convoy") -> Prediction`,
`Prediction.to_dict()`, `load_profile(name)`, `PROFILES`. Imports nothing GPU-related.
Command line: `python -m sim.run --help`.
"""
from .hardware import PROFILES, GpuProfile, load_profile
from .model import Prediction, predict
from .schedules import model_schedule

__all__ = ["predict", "Prediction", "load_profile", "PROFILES", "GpuProfile", "model_schedule"]
