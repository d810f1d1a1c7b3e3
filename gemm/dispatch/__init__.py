"""Which schedule gemm.matmul runs for a shape, and why.

`choose(...)` answers from, in order:
  autotune  what `gemm.autotune` measured on this GPU for this shape (a disk cache);
  table     the table shipped for this GPU: the best schedule measured in the shape's
            half-octave bucket of M, N and K (gemm/dispatch/tables/<gpu>.json, data made
            by `python -m experiments.make_table` from a measured sweep);
  model     the simulator's ranking of the candidate schedules (sim.rank), for a shape
            no table covers;
  default   a fixed schedule, if the model cannot be imported.
`Plan` says which answered. Only this package (and gemm.api through it) imports sim.

Most of the table was measured on operands whose lines start on 128-byte boundaries. Lines that
start off them (a pitch of 16-byte but not 128-byte multiples, or an offset view, read in place)
make each box row straddle two cache lines: where they start inside a 32-byte sector that costs
unclustered tiles up to 1.8x and clustered ones ~6% (the profile's l2_misaligned_row_clk), on a
sector 2-13% (l2_line_straddle_row_clk). A bucket whose rule was measured with lines off 128
bytes (gemm.dispatch.table, `lines_off`) answers such a call as it is. Elsewhere, where the
model says that cost takes the aligned rule's choice more than MISALIGNED_MARGIN on a product of
at least MISALIGNED_MIN_MS (the sizes the cost was measured at), the model ranks the candidates
with the cost instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..limits import L2_SECTOR_BYTES, TMA_ALIGNMENT_BYTES
from ..schedule import INPUT_BYTES, Schedule, from_spec, preset
from . import table
from .candidates import WAVE_FIT_SPECS, candidates

# The answer when nothing else does: the ring kernel measured fastest at 8192^3 among V1-V5;
# for a batch of products (which only the producer-warpgroup kernels run), V7 without clusters.
DEFAULT_SCHEDULE = preset("v2", block_n=192, stages=2, name="default")
DEFAULT_BATCHED = from_spec("v7:cluster_m=1")
# Tables are measured on the H200; an H100 runs the same SMs (132 on the SXM part) and
# takes the H200's table until it has its own.
TABLE_FOR = {"h100-sxm": "h200-sxm"}
MISALIGNED_MARGIN = 1.05
MISALIGNED_MIN_MS = 0.05
# A tile cut to the product's width (candidates.WAVE_FIT_SPECS) is taken only this far ahead by
# the model: a 256-row one of every candidate that is not wave-fitted (the model's ranking of
# large tiles scatters ~2-3% around the measured order); the lone 128-row one of every other
# candidate, wave-fitted or not (its ranking against 128x320 and the 256-row tiles scatters
# ~10%).
WAVE_FIT_MARGIN = 0.97
LONE_WAVE_FIT_MARGIN = 0.92
# gemm.autotune times the model's first few and, beside them, the best-ranked schedule of this
# many other tiles: the model's ranking errs most between tile shapes (its L2 -> SM port is
# slowest on small tiles whose operands stay in L2), less among one tile's stages, splits and
# clusters, so the first few are often one tile's variants.
AUTOTUNE_OTHER_TILES = 2


@dataclass(frozen=True)
class Plan:
    schedule: Schedule
    source: str          # "explicit", "autotune", "table", "model" or "default"
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.schedule.name} ({self.source}{': ' + self.detail if self.detail else ''})"


def choose(m: int, n: int, k: int, batch: int = 1, dtype: str = "float16", gpu: str = "h200-sxm",
           tuned: dict | None = None, line_starts: tuple[str, str] = ("line", "line")) -> Plan:
    """The schedule for one product shape on `gpu` (a profile name: h200-sxm, h100-sxm).
    `tuned` is the autotune cache's entry for the shape, if the caller has one; `line_starts`
    where A's and B's lines, as the kernel reads them, start (gemm.limits.LINE_STARTS)."""
    if tuned is not None:
        return Plan(from_spec(tuned["schedule"]), "autotune",
                    f"fastest of {len(tuned.get('timed_ms', {}))} timed on this GPU ({tuned.get('date', '?')})")
    table_gpu = gpu if table.load(gpu) else TABLE_FOR.get(gpu, gpu)
    pitch = model_line_pitch(k, line_starts)
    lines_off = line_starts != ("line", "line")
    measured_off = table.lookup(table_gpu, m, n, k, batch, dtype, lines_off=True) if lines_off else None
    if measured_off is not None:   # a rule measured with lines off 128 bytes: it stands as it is
        spec, source = measured_off
        return Plan(from_spec(spec), "table", f"{table_gpu} bucket of {m}x{n}x{k}, lines off 128 bytes"
                    + (f", {source}" if source else ""))
    hit = table.lookup(table_gpu, m, n, k, batch, dtype)
    if hit is not None:
        spec, source = hit
        plan = Plan(from_spec(spec), "table", f"{table_gpu} bucket of {m}x{n}x{k}" + (f", {source}" if source else ""))
        if not lines_off:
            return plan
        costs = _misaligned_cost(plan.schedule, m, n, k, batch, dtype, gpu, pitch)
        if costs is None or costs[1] < MISALIGNED_MIN_MS or costs[1] < MISALIGNED_MARGIN * costs[0]:
            return plan
    ranked = ranking(m, n, k, batch, dtype, gpu, line_pitch=pitch if lines_off else None)
    default = DEFAULT_BATCHED if batch > 1 else DEFAULT_SCHEDULE
    if ranked is None:
        return Plan(default, "default", "no table entry, and the model could not be imported")
    if not ranked:
        return Plan(default, "default", "no candidate the model can place on this GPU")
    best, ms = past_wave_fit_margin(ranked)
    why = "lines off 128 bytes, which the table's measurements did not have; " if lines_off else ""
    if best is ranked[0][0]:
        return Plan(best, "model", f"{why}predicted {ms * 1e3:.1f} us, fastest of {len(ranked)} candidates")
    first, first_ms = ranked[0]
    return Plan(best, "model", f"{why}predicted {ms * 1e3:.1f} us; {first.name} (a tile cut to the width) "
                               f"{first_ms * 1e3:.1f} us, short of its margin")


def choose_packed(plain: Plan, m: int, n: int, k: int, batch: int = 1, dtype: str = "float16",
                  gpu: str = "h200-sxm") -> Plan:
    """The plan for a product whose weights come packed (gemm.pack_weights): `plain`, the plan of
    the same product unpacked, where its schedule can read them; else the model's fastest of the
    candidates that can (a 64-row tile side of the weights, or whole parts of 64 in a cluster;
    K tiles of 64 or 128); else V7 without clusters, which can."""
    from ..packed import packed_gaps_of
    if not packed_gaps_of(plain.schedule, dtype):
        return plain
    ranked = [(s, ms) for s, ms in (ranking(m, n, k, batch, dtype, gpu) or []) if not packed_gaps_of(s, dtype)]
    why = f"{plain.schedule.name} ({plain.source}) cannot read packed weights"
    if not ranked:
        return Plan(DEFAULT_BATCHED, "default", f"{why}; no candidate the model ranks can")
    best, ms = ranked[0]
    return Plan(best, "model", f"{why}; predicted {ms * 1e3:.1f} us, fastest of {len(ranked)} that can")


def past_wave_fit_margin(ranked: list) -> tuple:
    """The model's first (schedule, ms), unless it is a wave-fitted tile less than its margin ahead:
    a 256-row one WAVE_FIT_MARGIN ahead of the fastest candidate that is not wave-fitted, the lone
    128-row one LONE_WAVE_FIT_MARGIN ahead of every other candidate. A first choice that falls
    short gives way to the next that clears its own."""
    for i, (s, t) in enumerate(ranked):
        if s.name not in WAVE_FIT_SPECS:
            return s, t
        if s.block_m < 256:
            rest = min((u for j, (_, u) in enumerate(ranked) if j != i), default=None)
            if rest is None or t <= LONE_WAVE_FIT_MARGIN * rest:
                return s, t
        else:
            other = next((u for r, u in ranked if r.name not in WAVE_FIT_SPECS), None)
            if other is None or t <= WAVE_FIT_MARGIN * other:
                return s, t
    return ranked[0]


# A pitch (elements) past a 128-byte multiple whose lines start where each of LINE_STARTS says
PITCH_PAST_A_LINE = {"line": 0, "sector": L2_SECTOR_BYTES // INPUT_BYTES,
                     "inside a sector": TMA_ALIGNMENT_BYTES // INPUT_BYTES}


def model_line_pitch(k: int, line_starts: tuple[str, str]) -> tuple[int, int]:
    """A line pitch (elements) standing for each operand's in the model (sim.model.line_starts):
    lines that start where `line_starts` says."""
    aligned = -(-k // 64) * 64
    return tuple(aligned + PITCH_PAST_A_LINE[start] for start in line_starts)


def _misaligned_cost(s: Schedule, m, n, k, batch, dtype, gpu, pitch):
    """(ms with aligned lines, ms with `pitch`) of one call by the model; None without it."""
    try:
        from sim import fast_predict
    except ImportError:
        return None
    aligned = model_line_pitch(k, ("line", "line"))
    return tuple(fast_predict(s, m, n, k, gpu=gpu, dtype=dtype, batch=batch, line_pitch=p).call["serial_ms"]
                 for p in (aligned, pitch))


def ranking(m: int, n: int, k: int, batch: int = 1, dtype: str = "float16", gpu: str = "h200-sxm",
            line_pitch: tuple[int, int] | None = None):
    """[(schedule, predicted ms)] of the candidates, fastest first; None without the model.
    `line_pitch` as sim.predict's (default: contiguous operands)."""
    try:
        from sim import rank
    except ImportError:   # the model's own dependencies (simpy) missing
        return None
    return rank(candidates(m, n, k, batch, dtype), m, n, k, batch=batch, dtype=dtype, gpu=gpu, line_pitch=line_pitch)


def tuning_candidates(m: int, n: int, k: int, batch: int = 1, dtype: str = "float16", gpu: str = "h200-sxm",
                      top: int = 3, other_tiles: int = AUTOTUNE_OTHER_TILES) -> list[Schedule]:
    """The schedules gemm.autotune times, in order: the table's choice and the model's ranking,
    the first `top` of them; then, of each tile (rows x columns, swapped or not) not among those,
    its best-ranked schedule, for up to `other_tiles` tiles."""
    first = [s for s in (table_choice(m, n, k, batch, dtype, gpu),) if s is not None]
    ranked = [s for s, _ in (ranking(m, n, k, batch, dtype, gpu) or [])]
    if not first and not ranked:
        ranked = [DEFAULT_BATCHED if batch > 1 else DEFAULT_SCHEDULE]
    chosen = list(dict.fromkeys(first + ranked))[:top]
    tiles, others = {_tile(s) for s in chosen}, []
    for s in ranked:
        if len(others) == other_tiles:
            break
        if _tile(s) not in tiles:
            others.append(s)
            tiles.add(_tile(s))
    return chosen + others


def _tile(s: Schedule) -> tuple:
    return s.block_m, s.block_n, s.swap_ab


def table_choice(m: int, n: int, k: int, batch: int = 1, dtype: str = "float16", gpu: str = "h200-sxm"):
    """The table's schedule for the shape's bucket, or None."""
    hit = table.lookup(gpu if table.load(gpu) else TABLE_FOR.get(gpu, gpu), m, n, k, batch, dtype)
    return from_spec(hit[0]) if hit else None


__all__ = ["Plan", "choose", "choose_packed", "candidates", "ranking", "table_choice", "tuning_candidates", "DEFAULT_SCHEDULE"]
