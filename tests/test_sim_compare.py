"""CPU test of python -m experiments.compare on a tiny synthetic measured.csv."""
import csv

import pytest

from experiments import compare

HEADER = ("kernel,version,m,n,k,dtype,block_m,block_n,block_k,stages,ms,tflops,cublas_ms,cublas_tflops,"
          "ratio,correct,rel_err,registers,ctas_per_sm,b_major,gpu,sm_clock_mhz,date")
ROWS = [  # synthetic figures, not measurements
    "k1,v1,1024,1024,1024,float16,128,128,64,1,0.0100,214.7,0.0050,429.5,0.5,True,1e-4,154,3,k,test,1665,d",
    "k2,v2,1024,1024,1024,float16,128,128,64,2,0.0090,238.6,0.0050,429.5,0.55,True,1e-4,154,3,k,test,1500,d",
    "k3,v2,1024,2048,512,float16,64,128,32,3,0.0080,134.2,0.0050,214.7,0.62,True,1e-4,90,5,k,test,,d",
]


@pytest.fixture
def results(tmp_path):
    d = tmp_path / "h200-sxm"
    d.mkdir()
    (d / "measured.csv").write_text("# gpu: test\n" + HEADER + "\n" + "\n".join(ROWS) + "\n")
    return tmp_path


def test_compare_writes_table_summary_and_plot(results):
    key = ("v2", 128, 128, 64, 2)
    s = compare.compare("h200-sxm", results, held_in={key})
    out = results / "h200-sxm" / "compare.csv"
    lines = out.read_text().splitlines()
    assert lines[0] == "# gpu: test" and any(ln.startswith("# compared by") for ln in lines)
    rows = list(csv.DictReader(ln for ln in lines if not ln.startswith("#")))
    assert len(rows) == 3
    for r in rows:
        assert set(HEADER.split(",")) <= set(r) and set(compare.EXTRA_COLUMNS) <= set(r)
        pred, meas = float(r["predicted_tflops"]), float(r["tflops"])
        assert pred > 0 and float(r["predicted_ms"]) > 0
        assert float(r["error_ratio"]) == pytest.approx(pred / meas, rel=1e-3)
    held = {compare.row_key(r): r["held_out"] for r in rows}
    assert held[key] == "False" and list(held.values()).count("True") == 2
    assert rows[2]["predicted_tflops_at_row_clock"] == ""          # no clock in that row
    assert float(rows[1]["predicted_tflops_at_row_clock"]) > 0
    assert s["n"] == 3 and s["held_out"] == 2
    errs = [abs(float(r["error_ratio"]) - 1) * 100 for r in rows]
    assert s["max_abs_pct"] == pytest.approx(max(errs)) and s["median_abs_pct"] == pytest.approx(sorted(errs)[1])
    assert -1 <= s["spearman"] <= 1
    assert (results / "h200-sxm" / "compare.png").stat().st_size > 1000
    assert "median" in compare.format_summary("h200-sxm", s)


def test_spearman():
    assert compare.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert compare.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert compare.spearman([1, 2, 2, 3], [1, 2, 2, 3]) == pytest.approx(1.0)


def test_command_line(results, capsys):
    assert compare.main(["--results", str(results), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "h200-sxm" in out and "Spearman" in out
    assert not (results / "h200-sxm" / "compare.png").exists()
