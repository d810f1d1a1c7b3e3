"""The DRAM-bytes study (experiments/research/dram_order.py) on run 120's Nsight Compute record."""
from pathlib import Path

from experiments.research.dram_order import summarize

RECORD = Path(__file__).resolve().parents[2] / "results/h200-sxm/logs/bench/run120-ncu-dram.csv"


def test_each_launch_pairs_with_its_kernel_and_the_model_counts_the_whole_tiles():
    rows = {(r["shape"], r["schedule"]): r for r in summarize(RECORD)}
    assert len(rows) == 18
    assert rows[("8192x8192x8192", "torch")]["model_gb"] == ""
    # the per-wave count of the unclustered tiles within 2% of what the profiler counted
    for spec in ("v7", "v7:raster_group=16", "v7:k_order=serpentine"):
        assert abs(float(rows[("8192x8192x8192", spec)]["model_over_ncu"]) - 1) < 0.02
    # the serpentine order reads less from DRAM than its forward twin, in the model and measured
    for shape in ("8192x8192x8192", "4096x22016x4096"):
        fwd, serp = rows[(shape, "v7:raster_group=16")], rows[(shape, "v7:raster_group=16,k_order=serpentine")]
        assert float(serp["dram_read_gb"]) < 0.95 * float(fwd["dram_read_gb"])
        assert float(serp["model_gb"]) < 0.95 * float(fwd["model_gb"])
