"""How many of the A and B bytes come from HBM: one interface over the strategies.

The core (engines.memory_traffic) counts every panel once per wave that uses it: the CTAs
that share a panel read its K slices side by side. Whether they do is a statistical
question about the whole grid, answered by one of:

  "per-wave"  the core's figure, as if every panel's sharers stayed together;
  "convoy"    sim/convoy.py (predict's default): per wave while a miss's extra latency
              holds the sharers together (V1, shallow rings), else the bytes of a grid of
              free-running CTAs, their measured spread replayed through an LRU L2;
  "timeline"  sim/timeline.py: every CTA of the grid, one event per K step, through an L2
              of finite size (a few seconds).

`hbm_read_bytes(strategy, ...)` returns (bytes, note); None for bytes means the core's
figure stands. Launches the replays do not describe (persistent CTAs, split-K slices,
batches, swap-AB) keep the per-wave figure, with a note saying so.
"""
from __future__ import annotations

from gemm.schedule import Schedule, ScheduleError

from .hardware import GpuProfile

STRATEGIES = ("convoy", "per-wave", "timeline")


def replayable(s: Schedule, batch: int = 1) -> bool:
    """Whether the grid replays (convoy, timeline) describe this launch: one CTA per tile,
    launched in the raster order, over one product."""
    return not s.persistent and s.split_k == 1 and batch == 1 and not s.swap_ab


def hbm_read_bytes(strategy: str, s: Schedule, m: int, n: int, k: int, prof: GpuProfile, ctas_per_sm: int,
                   mmas: bool = True, batch: int = 1) -> tuple[float | None, str | None]:
    """(HBM read bytes, note) by `strategy`; (None, note-or-None) keeps the per-wave figure."""
    if strategy not in STRATEGIES:
        raise ScheduleError(f"reuse must be one of {STRATEGIES}, got {strategy!r}")
    if strategy == "per-wave":
        return None, None
    if not replayable(s, batch):
        return None, (f"HBM bytes per wave: the {strategy} replay describes one CTA per tile of one product "
                      "(this launch is persistent, split-K, batched or swap-AB)")
    if strategy == "convoy":
        from . import convoy
        held = convoy.reuse(s, m, n, k, prof, ctas_per_sm, mmas=mmas)
        return (None if held["held"] else held["hbm_read_bytes"]), held["note"]
    from .timeline import summary
    grid = summary(s, m, n, k, prof)
    return grid["hbm_read_bytes"], (f"HBM read bytes from the GPU-wide timeline (sim/timeline.py): "
                                    f"{grid['hbm_read_bytes'] / 1e9:.2f} GB")
