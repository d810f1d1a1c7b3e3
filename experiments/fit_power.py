"""Power-cap clock model, tried and NOT accepted (seventh pass; sim/README.md): python -m experiments.fit_power

Form (board power at the cap, static power folded into the cap, cap = 1):
    f^g * (c0 + a*u + b*B) + h*H = 1
  f  SM clock (GHz); u tensor utilisation per clock; B L2->SM bytes per SM clock;
  H  HBM TB/s (board-level, not on the SM's voltage; model's memory_traffic bytes / measured ms);
  g  = 1 + 2 dlnV/dlnf: dynamic power ~ activity x f x V(f)^2; V flat -> 1, V ~ sqrt(f) -> 2,
       V ~ f -> 3. Scanned 1..3 (V(f) unknown for GH100).
  Form "A" has h = 0 (the fourth pass's form); "C" adds the HBM term. "D" (twelfth pass)
  takes the L2 -> SM traffic off the SM's voltage (the L2 and crossbar have their own clock):
      f^g * (c0 + a*u) + b*T + h*H = 1,  T = B x f x 132 SMs (TB/s), scanned to g = 5.
Fit: linear least squares in power on mma_loop.csv (5 rows, B = 0, H = 0) + at most two named
clock.csv rows that are not the seed's 128x128x64 tile; load_loop.csv (7 rows, all at the
max clock) as the inequality P(1.98 GHz) <= 1, reported as `ldP`. Each held-out clock.csv
row's clock is then solved from its *measured* activity (per clock fixed) and compared.
Acceptance (brief): held-out median <= 3%, max <= 8%, and the clock order V2 local < V2 < V1.
No GPU needed; numpy only.
"""
from __future__ import annotations

import csv
import itertools
import statistics as st
from pathlib import Path

import numpy as np

R = Path(__file__).with_name("results") / "h200-sxm"
FMAX = 1.98
L2_TBS_PER_B_CLK_GHZ = 132 / 1000  # bytes per SM clock x GHz x 132 SMs -> TB/s
HO = ["v1 128x128x64", "v2 128x128x64 s2", "v2 128x128x64 s2 local", "v2 128x128x64 s3",
      "v2 128x128x64 s4"]


def _rows(name):
    with open(R / name) as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _hbm_tbs(raw, ctas=None):
    from gemm.schedule import preset
    from sim.engines import grid, memory_traffic, residency, waves
    from sim.hardware import load_profile
    prof = load_profile("h200-sxm")
    v = "v1" if raw["family"] == "serial" else "v2"
    kw = dict(block_m=int(raw["block_m"]), block_n=int(raw["block_n"]), block_k=int(raw["block_k"]))
    if v == "v2":
        kw["stages"] = int(raw["stages"])
    s = preset(v, **kw)
    c = ctas or residency(s, prof)["ctas_per_sm"]
    tm, tn = grid(s, 8192, 8192)
    t = memory_traffic(s, 8192, 8192, 8192, waves(tm * tn, prof.sm_count, c)["per_wave"])
    return t["hbm_bytes"] / (float(raw["ms"]) * 1e-3) / 1e12


def load():
    def act(raw, tensor=True, hbm=True, ctas=None):
        return dict(name=raw["schedule"], f=float(raw["clock_ghz"]),
                    u=float(raw["tensor_util_per_clock"]) if tensor else 0.0,
                    B=float(raw["l2_bytes_per_sm_clk"]), H=_hbm_tbs(raw, ctas) if hbm else 0.0)
    mma = [act(r, hbm=False) for r in _rows("mma_loop.csv")]
    ld = [act(r, tensor=False, ctas=int(r["ctas_per_sm"])) for r in _rows("load_loop.csv")]
    clk = [act(r) for r in _rows("clock.csv")]
    return mma, ld, clk


def power(p, g, f, r, form="A"):
    c0, a, b, h = p
    # activity per clock fixed; HBM TB/s scales with the clock
    if form == "D":  # the L2 -> SM traffic off the SM's voltage: its power follows bytes per second
        return f ** g * (c0 + a * r["u"]) + b * r["B"] * f * L2_TBS_PER_B_CLK_GHZ + h * r["H"] * f / r["f"]
    return f ** g * (c0 + a * r["u"] + b * r["B"]) + h * r["H"] * f / r["f"]


def solve(p, g, r, form="A"):
    if power(p, g, FMAX, r, form) <= 1:
        return FMAX
    lo, hi = 0.3, FMAX
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if power(p, g, mid, r, form) > 1 else (mid, hi)
    return lo


def fit(rows, g, form):
    if form == "D":
        X = [[r["f"] ** g, r["f"] ** g * r["u"], r["B"] * r["f"] * L2_TBS_PER_B_CLK_GHZ, r["H"]] for r in rows]
    else:
        X = [[r["f"] ** g, r["f"] ** g * r["u"], r["f"] ** g * r["B"], r["H"] if form == "C" else 0.0]
             for r in rows]
    p, *_ = np.linalg.lstsq(np.array(X), np.ones(len(rows)), rcond=None)
    return p


def report(p, g, fitted, ld, clk, label, form="A"):
    held = [c for c in clk if c["name"] not in fitted]
    err = {c["name"]: (solve(p, g, c, form) / c["f"] - 1) * 100 for c in held}
    e = [abs(x) for x in err.values()]
    by = {c["name"]: solve(p, g, c, form) for c in clk}
    v1, v2, vl = by[HO[0]], by[HO[1]], by[HO[2]]
    ldp = max(power(p, g, FMAX, r, form) for r in ld)
    ok = st.median(e) <= 3 and max(e) <= 8 and vl < v2 < v1
    print(f"{label:44s} g={g} c0,a,b,h={np.round(p, 4)} ldP={ldp:.2f} held-out med {st.median(e):4.1f} "
          f"max {max(e):4.1f} | " + " ".join(f"{err.get(h, float('nan')):+5.1f}" for h in HO)
          + f" | V2/V1 {v2 / v1 - 1:+.3f} local/V1 {vl / v1 - 1:+.3f}" + ("  ACCEPT" if ok else ""))
    return ok


def main():
    mma, ld, clk = load()
    print("measured: V2/V1 clock %+.3f, local/V1 %+.3f" % (clk[1]["f"] / clk[0]["f"] - 1, clk[2]["f"] / clk[0]["f"] - 1))
    print("columns after '|':", ", ".join(HO))
    others = [c["name"] for c in clk if c["name"] not in HO]
    accepted = 0
    for form in "ACD":
        for k in (1, 2):
            for extra in itertools.combinations(others, k):
                if form == "A" and k == 2:
                    continue
                for g in (1.0, 1.5, 2.0, 2.5, 3.0) + ((4.0, 5.0) if form == "D" else ()):
                    rows = mma + [c for c in clk if c["name"] in extra]
                    p = fit(rows, g, form)
                    if min(p[1:3]) < 0 or (form != "D" and p[3] < 0):
                        continue
                    accepted += report(p, g, set(extra), ld, clk, f"{form} mma+" + "+".join(extra), form)
    print("diagnostic, in-sample ceiling (mma + all 12 clock rows fitted; 'held-out' = in-sample here):")
    for form in "ACD":
        for g in (1.0, 2.0, 3.0):
            report(fit(mma + clk, g, form), g, set(), ld, clk, f"{form} mma+all clock rows", form)
    print(f"accepted fits: {accepted}")


if __name__ == "__main__":
    main()
