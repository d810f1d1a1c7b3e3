"""CPU test of experiments/research/l2_capacity.py's summary of run 55 (the GEMM's panel pattern)."""
import pytest

from experiments.paths import logs_dir
from experiments.research import l2_capacity


def test_l2_keeps_the_panel_pattern_with_or_without_a_power_of_two_stride():
    """Run 55 (l2_capacity.py --panels): K slices of 8192 rows 16 KB apart, read twice, lose half
    the second sweep at 45.7 MiB (one reader) and 39.2 (two), the same with rows 128 B longer: no
    capacity lost to set aliasing (docs/research/notes.md 68)."""
    res = l2_capacity.summarize(logs_dir() / "run55")
    half = res["half_miss_mib"]
    assert half["panels"] == pytest.approx(half["panels ld+64"], abs=0.5) and 44 < half["panels"] < 48
    assert half["panels, two readers"] == pytest.approx(half["panels ld+64, two readers"], abs=0.5)
    assert 37 < half["panels, two readers"] < 42
