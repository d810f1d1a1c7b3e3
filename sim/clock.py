"""The SM clock a kernel earns from what it does (fourteenth pass; experiments/NOTES.md 57-59).

From its first launch after a rest (and through the ~30 launches of a timing like the seed's,
before the 700 W controller's slower fall) each GEMM on the H200 counts a clock of its own:
V2 1.25 GHz, V1 1.55, the WGMMA-only loop 1.64. Under Nsight Compute (runs 47-48) the clock
follows three activities, each per SM clock held as the clock moves:

    c_t x SMs x u x (f / F_REF)^g  +  c_l x L  +  c_d x H  =  1

u the tensor cores' share of their peak per clock, L the L2 -> SM and H the DRAM traffic in
TB/s at clock f. The limit binds where the sum reaches 1; a kernel under it runs at the top
clock (WGMMA kernels count at most ~0.91 of the 1.98 GHz boost clock, run 36). Fitted on
WGMMA-only loops and on GEMMs that are not the seed's (`python -m experiments.fit_clock_form`);
the seed's V1 / V2 / V3 kernels, held out, come within 0.5% (median) and 1.7% of their clocks
given their own measured activity (run 48). The profile carries the coefficients
(`clock_form_coef`, `clock_form_g`); `sim.predict(.., clock="earned")` solves for the clock
with the model's own activity instead of a measured one.
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
