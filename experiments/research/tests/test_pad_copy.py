"""The copy-rate parameter comes from the committed microbenchmark: the median of its large cases."""
import json

from experiments.paths import results_dir
from experiments.research.pad_copy import write_profile


def test_profile_rate_is_the_median_of_the_large_cases(tmp_path):
    import csv
    source = results_dir() / "pad_copy.csv"
    rows = list(csv.DictReader(line for line in source.open() if not line.startswith("#")))
    large = sorted(float(r["kernel_gb_per_s"]) for r in rows if float(r["mbytes"]) >= 60)
    small = [float(r["kernel_gb_per_s"]) for r in rows if float(r["mbytes"]) < 60]
    assert large and small and max(small) < min(large)      # the skinny case stays out
    rate = write_profile(source, profiles_dir=tmp_path)
    middle = len(large) // 2
    assert rate == (large[middle] if len(large) % 2 else (large[middle - 1] + large[middle]) / 2)
    written = json.loads((tmp_path / "h200-sxm.json").read_text())
    assert written["parameters"]["line_copy_gb_per_s"] == round(rate)
    assert written["provenance"]["line_copy_gb_per_s"].startswith("[measured]")
