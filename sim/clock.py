"""The SM clock a kernel earns from what it does: `predict(.., clock="earned")`.

From its first launch after a rest (and through the ~30 launches of a timing like the seed's,
before the 700 W controller's slower fall) each GEMM on the H200 counts a clock of its own:
V2 1.25 GHz, V1 1.55, the WGMMA-only loop 1.64. Under Nsight Compute the clock follows three
activities, each per SM clock held as the clock moves:

    c_t x SMs x u x (f / F_REF)^g  +  c_l x L  +  c_d x H  =  1

u the tensor cores' share of their peak per clock, L the L2 -> SM and H the DRAM traffic in
TB/s at clock f. The limit binds where the sum reaches 1; a kernel under it runs at the top
clock (WGMMA kernels count at most ~0.91 of the 1.98 GHz boost clock: wgmma_clock_top_ghz).
Fitted on WGMMA-only loops and on GEMMs that are not the seed's (`python -m
experiments.research.fit_clock_form`, clock_form.csv); the seed's V1 / V2 / V3 kernels, held out, come
within 0.5% (median) and 1.7% of their clocks given their own measured activity. The profile
carries the coefficients (`clock_form_coef`, `clock_form_g`); `predict_at_earned_clock`
solves for the clock with the model's own activity instead of a measured one.
"""
from __future__ import annotations

import numpy as np

F_REF = 1.8  # GHz: the clock the tensor term is quoted at


def terms(u: float, l2_tbs: float, dram_tbs: float, f_at: float, f: float, g: float,
          sms: int = 132, l2_on_voltage: bool = False) -> np.ndarray:
    """The form's three terms for an activity measured at clock `f_at`, moved to clock `f`
    with its work per clock held: the traffic in TB/s scales with the clock. With
    `l2_on_voltage` the L2 traffic's cost per byte also follows the SM's V^2 ~ (f / F_REF)^(g-1)
    (a variant the fit tries; the profile's form has it off)."""
    s = f / f_at
    volt = (f / F_REF) ** (g - 1) if l2_on_voltage else 1.0
    return np.array([sms * u * (f / F_REF) ** g, l2_tbs * s * volt, dram_tbs * s])


def fit(rows, g: float, sms: int = 132, l2_on_voltage: bool = False) -> np.ndarray:
    """Coefficients (c_t, c_l, c_d) with terms . c = 1 at each row's own clock (least squares);
    rows: (u, l2_tbs, dram_tbs, f) of kernels the limit holds below the top clock."""
    x = np.array([terms(u, l2, dram, f, f, g, sms, l2_on_voltage) for u, l2, dram, f in rows])
    c, *_ = np.linalg.lstsq(x, np.ones(len(x)), rcond=None)
    return c


def over_limit(u: float, l2_tbs: float, dram_tbs: float, f: float, coef, g: float, sms: int = 132,
               l2_on_voltage: bool = False) -> bool:
    """True when an activity measured at clock f is over the limit there."""
    return bool(terms(u, l2_tbs, dram_tbs, f, f, g, sms, l2_on_voltage) @ np.asarray(coef, dtype=float) > 1)


def earned_clock(u: float, l2_tbs: float, dram_tbs: float, f_at: float, coef, g: float,
                 top: float, sms: int = 132, l2_on_voltage: bool = False) -> float:
    """The clock (GHz) at which the activity measured at `f_at` reaches the limit; `top` when
    it stays under it there."""
    c = np.asarray(coef, dtype=float)
    over = lambda f: terms(u, l2_tbs, dram_tbs, f_at, f, g, sms, l2_on_voltage) @ c > 1  # noqa: E731
    if not over(top):
        return top
    lo, hi = 0.3, top
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if over(mid) else (mid, hi)
    return (lo + hi) / 2


def prediction_over_limit(p, prof) -> bool:
    """Whether prediction `p`'s own activity (tensor use, L2 -> SM and DRAM bytes a second) is over
    the profile's clock form at the clock it was made at."""
    s = p.call["kernel_ms"] * 1e-3
    return over_limit(p.utilization["tensor"], p.bytes["smem_fill_bytes"] / s / 1e12, p.bytes["hbm_bytes"] / s / 1e12,
                      p.clock_ghz, prof.clock_form_coef, prof.clock_form_g, prof.sm_count)


def highest_clock_under_limit(at, prof, lo: float, hi: float, steps: int, below=None):
    """The prediction at the highest clock in [lo, hi] whose own activity stays under the limit:
    `at(f)` predicts at clock f; `hi`'s if it is under, else bisection in `steps` halvings
    (`below`: a prediction already known under the limit at `lo`)."""
    p = at(hi)
    if not prediction_over_limit(p, prof):
        return p
    for _ in range(steps):
        mid = (lo + hi) / 2
        p_mid = at(mid)
        if prediction_over_limit(p_mid, prof):
            hi = mid
        else:
            lo, below = mid, p_mid
    return below or at(lo)


def predict_at_earned_clock(predict_at_profile, schedule, m, n, k, gpu, options: dict):
    """sim.predict(clock="earned"): the prediction at the clock where the schedule's own activity
    meets the profile's clock form. Bisection on the clock, each step a prediction at that
    clock (the activity per clock moves with it: the L2 -> SM port is in ns). The HBM bytes
    are decided once, at the profile's clock (a bisection whose bytes jumped between its steps
    would not converge). The L2 -> SM activity is the bytes that land in the SMs' shared memory:
    a multicast box counts at every SM it fills, as it crosses the fabric to each, so a cluster
    that halves one operand's L2 reads earns no clock for it (the form was fitted on kernels
    without clusters, where the two counts are one). `predict_at_profile(schedule, m, n, k, profile, **options)`."""
    import dataclasses

    from gemm.schedule import ScheduleError

    from .engines import residency
    from .hardware import load_profile
    from .reuse import hbm_read_bytes

    prof = load_profile(gpu) if isinstance(gpu, str) else gpu
    if prof.clock_form_coef is None:
        raise ScheduleError(f"profile {prof.name!r} has no clock form (clock_form_coef): "
                            "use clock='profile' or calibrate it (python -m experiments.research.fit_clock_form .. --write)")
    options = dict(options)
    top = prof.wgmma_clock_top_ghz if options.get("mmas", True) else prof.clock_max_ghz
    if options["hbm_read_bytes"] is None and options["loads"] and options["reuse"] != "per-wave":
        c = options["ctas_per_sm"] or residency(schedule, prof, options.get("registers"))["ctas_per_sm"]
        b, note = hbm_read_bytes(options["reuse"], schedule, m, n, k, prof, c, mmas=options.get("mmas", True),
                                 batch=options.get("batch", 1))
        options.update(reuse="per-wave", notes=[*(options["notes"] or []), *([note] if note else [])])
        if b is not None:
            options.update(hbm_read_bytes=b, hbm_read_source=f"{note.split(':')[0]}")

    def at(f):
        return predict_at_profile(schedule, m, n, k, dataclasses.replace(prof, clock_ghz=f), **options)
    p = highest_clock_under_limit(at, prof, 0.5, top, steps=14)
    s = p.call["kernel_ms"] * 1e-3
    p.notes.append(f"clock {p.clock_ghz:.3f} GHz earned from this schedule's activity (sim/clock.py: tensor "
                   f"{p.utilization['tensor']:.2f} per clock, L2->SM {p.bytes['smem_fill_bytes'] / s / 1e12:.2f} "
                   f"and DRAM {p.bytes['hbm_bytes'] / s / 1e12:.2f} TB/s) instead of the profile's {prof.clock_ghz:.3f}")
    return p
