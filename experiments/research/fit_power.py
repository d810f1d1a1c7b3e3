"""Power-cap clock model, tried and NOT accepted (seventh pass; docs/research/model-passes.md): python -m experiments.research.fit_power

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

`--power` (twelfth pass): the board power itself, measured per kernel (runs 34 and 35,
experiments/power_draw.py: logs/run3[45]/power_draw.csv), fitted on the idle GPU, the
WGMMA-only and the load-only loops alone, with the GPU's temperature as a term:
    P = p0 + pT*T + f^g*(b + kt*u) + kl*L*[1 or (f/1.98)^(g-1)] + kd*H   (watts)
  L, H the L2 -> SM and DRAM TB/s ("flat": the L2 traffic's power off the SM's voltage;
  "volt": on it). Each GEMM's clock is then solved at a 690 W cap from its measured activity
  per clock and temperature, and set beside the clock its probe read.

`--sweep` (thirteenth pass): the board power against the number of busy SMs (runs 36-37,
experiments/power_sweep.py). (1) The WGMMA-only loop under the cap at 1.98 GHz gives P linear
in the busy SMs x u; each point where the cap lowers the clock then gives g on its own:
P - P_base = k U (f / f0)^g. (2) The memory's own power against the DRAM TB/s. (3) A form
fitted on the two sweeps and run 37's whole-grid load loops alone, the board power less the
memory's measured power:
    P_core = c0 + cT*T + kt*U*(f/1.8)^g + kl*L + kd*H   (U = busy SMs x u; L, H TB/s)
and each GEMM of runs 36-37 (held out) solved for its clock at the 690 W cap with its own
memory power and activity per clock.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import statistics as st
from pathlib import Path

import numpy as np

from experiments.paths import results_dir
from gemm.schedule import preset
from sim.engines import grid, memory_traffic, residency, waves
from sim.hardware import load_profile

R = results_dir()
FMAX = 1.98
L2_TBS_PER_B_CLK_GHZ = 132 / 1000  # bytes per SM clock x GHz x 132 SMs -> TB/s
HO = ["v1 128x128x64", "v2 128x128x64 s2", "v2 128x128x64 s2 local", "v2 128x128x64 s3",
      "v2 128x128x64 s4"]


def _rows(name):
    with open(R / name) as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _hbm_tbs(raw, ctas=None):
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


def clock_at_cap(power_at, cap=1.0):
    """The clock (GHz) at which power_at(f) reaches the cap: FMAX when it stays under it."""
    if power_at(FMAX) <= cap:
        return FMAX
    lo, hi = 0.3, FMAX
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if power_at(mid) > cap else (mid, hi)
    return lo


def solve(p, g, r, form="A"):
    return clock_at_cap(lambda f: power(p, g, f, r, form))


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


POWER_RUNS = ("run34", "run35")
POWER_CAP_W = 690.0  # where the capped kernels of runs 34-35 sit (678-716 W, median ~690)


def _power_rows():
    rows = []
    for run in POWER_RUNS:
        for r in _rows(Path("logs") / run / "power_draw.csv"):
            num = {k: float(r[k] or 0) for k in ("power_w", "temp_c", "probe_clock_ghz", "tensor_util_per_clock",
                                                 "l2_to_sm_tbs", "dram_tbs")}
            rows.append(dict(run=run, name=r["kernel"], kind=r["kind"], P=num["power_w"], T=num["temp_c"],
                             f=num["probe_clock_ghz"], u=num["tensor_util_per_clock"], L=num["l2_to_sm_tbs"],
                             H=num["dram_tbs"]))
    return rows


def _power_features(r, f, g, form):
    """P's terms at clock f, the activity per clock held (L and H scale with f)."""
    scale = f / r["f"] if r["f"] else 0.0
    on_sm = 0.0 if r["kind"] == "idle" else 1.0
    l2 = r["L"] * scale * ((f / FMAX) ** (g - 1) if form == "volt" else 1.0)
    return [1.0, r["T"], on_sm * f ** g, r["u"] * f ** g, l2, r["H"] * scale]


def power_fits():
    rows = _power_rows()
    micro = [r for r in rows if r["kind"] in ("idle", "mma", "load")]
    gemms = [r for r in rows if r["kind"] == "gemm"]
    meas = {(r["run"], r["name"]): r["f"] for r in gemms}
    print(f"fitted on {len(micro)} rows (idle, WGMMA-only and load-only loops of {', '.join(POWER_RUNS)}); "
          f"{len(gemms)} GEMM rows held out; cap {POWER_CAP_W:.0f} W")
    print("measured V2/V1 clock: " + ", ".join(
        f"{run} {meas[run, 'v2'] / meas[run, 'v1'] - 1:+.3f}" for run in POWER_RUNS))
    for g in (1.5, 2.0, 2.5, 3.0):
        for form in ("flat", "volt"):
            x = np.array([_power_features(r, r["f"], g, form) for r in micro])
            y = np.array([r["P"] for r in micro])
            c, *_ = np.linalg.lstsq(x, y, rcond=None)
            rms = float(np.sqrt(np.mean((y - x @ c) ** 2)))
            got = {(r["run"], r["name"]): clock_at_cap(
                lambda f, r=r: float(np.dot(c, _power_features(r, f, g, form))), POWER_CAP_W) for r in gemms}
            err = [abs(got[k] / meas[k] - 1) * 100 for k in got]
            print(f"g={g} {form:4s} fit rms {rms:5.1f} W | GEMM clocks |err| median {st.median(err):4.1f}% "
                  f"max {max(err):4.1f}% | V2/V1 " + ", ".join(
                      f"{run} {got[run, 'v2'] / got[run, 'v1'] - 1:+.3f}" for run in POWER_RUNS))


SWEEP_RUNS = {"mma": "run36", "load": "run37"}  # which run swept which loop
GEMM_RUNS = ("run36", "run37")
SWEEP_F0 = 1.8  # GHz: the counted clock the WGMMA-only loop holds under the cap


def _num(r, key):
    return float(r.get(key) or 0)


def sweep_rows():
    """(WGMMA-only sweep, load-only sweep, run 37's whole-grid load loops, GEMM rows by run)."""
    def sweep(kind):
        return [r for r in _rows(Path("logs") / SWEEP_RUNS[kind] / "power_sweep.csv")
                if r["loop"] == kind and r["pass"] != "idle"]
    draws = {run: _rows(Path("logs") / run / "power_draw.csv") for run in GEMM_RUNS}
    return (sweep("mma"), sweep("load"), [r for r in draws["run37"] if r["kind"] == "load"],
            {run: [r for r in rows if r["kind"] == "gemm"] for run, rows in draws.items()})


def g_by_capped_point(mma) -> list[tuple[str, float]]:
    """g from each capped point of the WGMMA-only sweep, given the uncapped points' line
    P = p0 + k U at their counted clock f0: g = ln((P - p0) / (k U)) / ln(f / f0)."""
    free = [r for r in mma if _num(r, "smi_clock_ghz") >= FMAX - 0.005]
    x = np.array([[1.0, _num(r, "busy_sms") * _num(r, "tensor_util_per_clock")] for r in free])
    (p0, k), *_ = np.linalg.lstsq(x, np.array([_num(r, "power_w") for r in free]), rcond=None)
    f0 = float(np.mean([_num(r, "probe_clock_ghz") for r in free]))
    out = []
    for r in mma:
        f = _num(r, "probe_clock_ghz")
        if r in free or f > 0.97 * f0:  # too near the top for the logarithm
            continue
        u = _num(r, "busy_sms") * _num(r, "tensor_util_per_clock")
        out.append((f"{r['ctas']} {r['pass']}", float(np.log((_num(r, "power_w") - p0) / (k * u)) / np.log(f / f0))))
    return out


def _core_features(r, kind, g, f=None, l2_on_voltage=False):
    """The core form's terms at counted clock f (activity per clock held); with `l2_on_voltage`
    the L2 traffic's power per byte also follows V^2 ~ (f / 1.8)^(g - 1)."""
    fc = _num(r, "probe_clock_ghz")
    f = f or fc
    busy = _num(r, "busy_sms") if r.get("busy_sms") else 132.0
    u = busy * _num(r, "tensor_util_per_clock")
    volt = (f / SWEEP_F0) ** (g - 1) if l2_on_voltage else 1.0
    return [1.0, _num(r, "temp_c"), u * (f / SWEEP_F0) ** g, _num(r, "l2_to_sm_tbs") * f / fc * volt,
            _num(r, "dram_tbs") * f / fc]


MEMORY_IDLE_W = 44.0  # the WGMMA-only sweep moves no DRAM bytes and was not sampled: the idle memory


def sweep_fits():
    mma, load, whole, gemms = sweep_rows()
    gs = g_by_capped_point(mma)
    print("g from each capped point of the WGMMA-only sweep (counted clock): "
          + ", ".join(f"{name} {g:.2f}" for name, g in gs) + f"; median {st.median(g for _, g in gs):.2f}")
    rail = [r for r in load + whole + gemms["run37"] if r.get("memory_power_w")]
    x = np.array([[1.0, _num(r, "dram_tbs")] for r in rail])
    (m0, km), *_ = np.linalg.lstsq(x, np.array([_num(r, "memory_power_w") for r in rail]), rcond=None)
    print(f"memory's own power: {m0:.1f} W + {km:.1f} W per TB/s of DRAM ({len(rail)} rows)")
    memory = {id(r): _num(r, "memory_power_w") if r.get("memory_power_w") else MEMORY_IDLE_W for r in mma + load + whole}
    fitted = [(r, "mma") for r in mma] + [(r, "load") for r in load + whole]
    measured = {(run, r["kernel"]): _num(r, "probe_clock_ghz") for run, rows in gemms.items() for r in rows}
    results = {}
    for g in (2.5, 3.0, 3.5):
        x = np.array([_core_features(r, kind, g) for r, kind in fitted])
        y = np.array([_num(r, "power_w") - memory[id(r)] for r, _ in fitted])
        c, *_ = np.linalg.lstsq(x, y, rcond=None)
        rms = float(np.sqrt(np.mean((y - x @ c) ** 2)))
        got = {}
        for run, rows in gemms.items():
            for r in rows:
                mem = _num(r, "memory_power_w") if r.get("memory_power_w") else m0 + km * _num(r, "dram_tbs")
                got[run, r["kernel"]] = clock_at_cap(
                    lambda f, r=r, mem=mem: float(np.dot(c, _core_features(r, "gemm", g, f))) + mem, POWER_CAP_W)
        err = {key: got[key] / measured[key] - 1 for key in got}
        e = [abs(v) * 100 for v in err.values()]
        print(f"g={g}: core fit rms {rms:4.1f} W | GEMM clocks |err| median {st.median(e):4.1f}% max {max(e):4.1f}% | "
              + " ".join(f"{run[-2:]} {name} {v * 100:+.1f}" for (run, name), v in err.items()))
        print("        V2/V1 clock predicted " + ", ".join(
            f"{run} {got[run, 'v2'] / got[run, 'v1'] - 1:+.3f}" for run in GEMM_RUNS) + ", measured " + ", ".join(
            f"{run} {measured[run, 'v2'] / measured[run, 'v1'] - 1:+.3f}" for run in GEMM_RUNS))
        results[g] = {"rms_w": rms, "err": err, "v2_over_v1": {run: got[run, "v2"] / got[run, "v1"] for run in GEMM_RUNS}}
    return {"g_points": gs, "memory": (m0, km), "fits": results, "residency_matched": residency_matched_fits(m0, km)}


def residency_matched_fits(m0: float, km: float) -> dict:
    """NOTES 49-50: the L2 / DRAM side fitted only on load-only loops at two or three CTAs per
    SM, the GEMMs' residency (runs 37 and 41 at 1.98 GHz, run 35's capped at 1.5-1.8 GHz), the
    tensor side on the WGMMA-only sweep; the L2 term flat or on the SM's voltage; held out, every
    GEMM of runs 36-37 and every capped point of run 40's GEMM sweep."""
    mma, load37, whole, gemms = sweep_rows()
    swept = lambda run: [r for r in _rows(Path("logs") / run / "power_sweep.csv") if r["pass"] != "idle"]  # noqa: E731
    loads = ([r for r in load37 + swept("run41") if r["loop"] == "load" and int(r["ctas"]) > 132] + whole
             + [r for r in _rows(Path("logs") / "run35" / "power_draw.csv") if r["kind"] == "load" and "x16" not in r["kernel"]])
    held = {f"{run[-2:]} {r['kernel']}": r for run, rows in gemms.items() for r in rows}
    held.update({f"40 {r['loop']} {r['ctas']} {r['pass']}": r for r in swept("run40")
                 if int(r["ctas"]) >= 132 and _num(r, "smi_clock_ghz") < FMAX - 0.01})  # the capped points
    memory = lambda r: _num(r, "memory_power_w") if r.get("memory_power_w") else m0 + km * _num(r, "dram_tbs")  # noqa: E731
    print(f"residency-matched: {len(loads)} load-only loops at 2-3 CTAs per SM, {len(held)} GEMM rows held out")
    out = {}
    for g in (2.5, 3.0, 3.5):
        for volt in (False, True):
            rows = [(r, MEMORY_IDLE_W) for r in mma] + [(r, memory(r)) for r in loads]
            x = np.array([_core_features(r, "", g, l2_on_voltage=volt) for r, _ in rows])
            y = np.array([_num(r, "power_w") - mem for r, mem in rows])
            c, *_ = np.linalg.lstsq(x, y, rcond=None)
            rms = float(np.sqrt(np.mean((y - x @ c) ** 2)))
            err = {name: clock_at_cap(lambda f, r=r: float(np.dot(c, _core_features(r, "", g, f, volt))) + memory(r),
                                      POWER_CAP_W) / _num(r, "probe_clock_ghz") - 1 for name, r in held.items()}
            e = [abs(v) * 100 for v in err.values()]
            # V2 / V1 in clock, predicted over measured: (1 + err V2) / (1 + err V1)
            pairs = {"36": ("36 v2", "36 v1"), "37": ("37 v2", "37 v1"), "40 at 396": ("40 v2 396 up", "40 v1 396 up")}
            v2v1 = {k: (1 + err[a]) / (1 + err[b]) for k, (a, b) in pairs.items()}
            out[g, volt] = {"rms_w": rms, "err": err, "v2_over_v1_vs_measured": v2v1}
            print(f"  g={g} L2 {'on the voltage' if volt else 'flat':14s} loops rms {rms:4.1f} W | GEMM clocks |err| "
                  f"median {st.median(e):4.1f}% max {max(e):4.1f}% | V2/V1 predicted over measured "
                  + ", ".join(f"{k} {v:.3f}" for k, v in v2v1.items()))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--power", action="store_true", help="fit the measured board power (runs 34-35) instead")
    ap.add_argument("--sweep", action="store_true", help="fit the busy-SM sweeps (runs 36-41) instead")
    args = ap.parse_args(argv)
    if args.power:
        power_fits()
        return
    if args.sweep:
        sweep_fits()
        return
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
