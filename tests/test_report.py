"""python -m experiments.report: the README's and docs/kernels.md's generated blocks are what the
committed CSVs give, and the bench's tables take over when they exist."""
import pytest

from experiments import report

LADDER = ("version,schedule,tflops,torch_tflops,cupy_tflops,ratio,correct,date\n"
          "v1,v1 128x128x64,540.0,700.0,690.0,0.771,True,2026-12-01\n"
          "v5,v5 128x256 s4 grouped,640.0,700.0,690.0,0.914,True,2026-12-01\n")
SHAPES = ("suite,name,m,n,k,batch,dtype,schedule,ours_tflops,torch_tflops,cupy_tflops,ratio,correct,rel_err,gpu,date\n"
          "square,8192,8192,8192,8192,1,float16,v2,600,650,640,0.923,True,2e-4,NVIDIA H200,2026-12-01\n"
          "square,4096,4096,4096,4096,1,float16,v2,500,560,600,0.833,True,2e-4,NVIDIA H200,2026-12-01\n"
          "decode,m16,16,4096,4096,1,bfloat16,v2,20,40,35,0.5,False,1,NVIDIA H200,2026-12-01\n")


def test_the_generated_blocks_are_current():
    """Figures in the README come from the committed results: regenerate them with
    `python -m experiments.report` whenever a results CSV changes."""
    assert report.main(["--check"]) == 0


def test_the_bench_tables_take_over_when_present(tmp_path):
    (tmp_path / "ladder.csv").write_text("# synthetic\n" + LADDER)
    (tmp_path / "shapes.csv").write_text("# synthetic\n" + SHAPES)
    text = "\n".join(report.readme_block(tmp_path, "test"))
    assert "| v5 | v5 128x256 s4 grouped | 640 | 700 | 690 | 0.91 | True |" in text
    assert "square: 2 shapes, median ratio 0.88, lowest 0.83 (4096)" in text
    assert "decode: 1 shape, median ratio 0.50, lowest 0.50 (m16), 1 not correct" in text
    kernels = "\n".join(report.kernels_block(tmp_path))
    assert "| v1 |" in kernels and "0.77x the faster of torch and cupy" in kernels and "to be measured" in kernels
    png = report.figure(tmp_path, "test", tmp_path / "f.png")
    assert png.stat().st_size > 1000


def test_replace_block():
    text = "a\n<!-- x -->\nold\n<!-- y -->\nb\n"
    assert report.replace_block(text, "<!-- x -->", "<!-- y -->", ["new"]) == "a\n<!-- x -->\nnew\n<!-- y -->\nb\n"
    with pytest.raises(ValueError):
        report.replace_block("no markers", "<!-- x -->", "<!-- y -->", [])


def test_the_suite_sentence_gives_the_decode_rows_share_of_the_copy_rate():
    rows = [{"suite": "decode", "name": "dec1-up", "ratio": "0.9", "correct": "True", "hbm_share": "0.812"},
            {"suite": "decode", "name": "dec64-up", "ratio": "1.1", "correct": "True", "hbm_share": "0.874"},
            {"suite": "square", "name": "sq512", "ratio": "1.0", "correct": "True", "hbm_share": ""}]
    text = report.shapes_summary(rows)
    assert "geomean 0.997 over 3 shapes" in text
    assert "81% (dec1-up) to 87% (dec64-up) of a device-to-device copy's rate" in text
    assert "copy" not in report.shapes_summary(rows[2:])


def test_the_suite_sentence_names_the_shapes_whose_kernels_trail_back_to_back():
    """One call between events can time the host; the calls back to back time the device, and the
    sentence names the shapes where cuBLAS's kernels are more than 5% faster there."""
    rows = [{"suite": "square", "name": "sq512", "ratio": "1.08", "correct": "True", "ours_b2b_us": "5.5",
             "cublas_b2b_us": "4.1"},
            {"suite": "square", "name": "sq4096", "ratio": "1.0", "correct": "True", "ours_b2b_us": "178.6",
             "cublas_b2b_us": "179.0"}]
    text = report.shapes_summary(rows)
    assert "back to back" in text and "over 2 shapes, below 0.95 on sq512 0.75." in text
    assert "none below 0.95" in report.shapes_summary(rows[1:])


def test_the_sustained_sentence_gives_the_dispatchers_schedule_in_both_regimes(tmp_path):
    (tmp_path / "sustained.csv").write_text(
        "# synthetic\nshape,regime,contender,calls_a_block,us_per_call,torch_over_contender,power_w,sm_clock_ghz\n"
        "sq4096,short,ours v7:cluster_m=2,3,200,0.98,,\nsq4096,short,ours v7,3,190,1.03,,\n"
        "sq4096,short,torch,3,196,1.0,,\nsq4096,long,ours v7:cluster_m=2,200,201,0.99,700,1.44\n"
        "sq4096,long,ours v7,210,191,1.04,700,1.44\nsq4096,long,torch,205,199,1.0,700,1.44\n")
    text = "\n".join(report.readme_block(tmp_path, "test"))
    assert "sq4096 0.98 / 0.99." in text
