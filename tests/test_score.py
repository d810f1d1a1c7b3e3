"""experiments.score without a GPU: the model's choices among a shape's measured candidates."""
from pathlib import Path

import pytest

from experiments.score import score

MEASURED_HEADER = "name,m,n,k,batch,dtype,schedule,ours_tflops,ratio,correct"
PREDICTED_HEADER = "name,m,n,k,batch,dtype,schedule,predicted_ms"


def _write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("# written by the test\n" + "\n".join([header] + rows) + "\n")
    return path


@pytest.fixture
def files(tmp_path):
    """One shape, four candidates. By TFLOPS, v7:cluster_m=2 is fastest; by the ratio to the
    cuBLAS timed beside each (what make_table chooses by) v7 is. The model ranks
    v7:cluster_m=2, v2:block_n=192, v7, then v7:block_n=192,stages=4,cluster_m=2; neither
    v2 (no ring kernel is a candidate) nor stream-K (the model's favourite, no candidate at
    4096^3, where its tiles fill waves) counts among the choices."""
    shape = "sq4096,4096,4096,4096,1,float16"
    measured = _write(tmp_path / "measured.csv", MEASURED_HEADER, [
        f'{shape},v7,740,1.000,True',
        f'{shape},v7:cluster_m=2,750,0.960,True',
        f'{shape},v2:block_n=192,600,0.800,True',
        f'{shape},"v7:block_n=192,stages=4,cluster_m=2",700,0.930,True',
        f'{shape},v7:stream_k=true,760,1.100,True',
    ])
    predicted = _write(tmp_path / "predicted.csv", PREDICTED_HEADER, [
        f'{shape},v7:stream_k=true,0.10',
        f'{shape},v7:cluster_m=2,0.20',
        f'{shape},v2:block_n=192,0.21',
        f'{shape},v7,0.22',
        f'{shape},"v7:block_n=192,stages=4,cluster_m=2",0.23',
    ])
    return predicted, measured


def test_choices_compare_ratios_among_the_candidates(files):
    res = score(*files)
    (name, first, first_share), = res["choices"]
    assert (name, first) == ("sq4096", "v7:cluster_m=2") and first_share == pytest.approx(0.96)
    (_, tuned, tuned_share), = res["tuned"]      # the model's first three, timed: v7 among them
    assert tuned == "v7" and tuned_share == 1.0


def test_every_measured_row_is_scored_for_error(files):
    res = score(*files)
    assert res["rows"] == 5 and not res["missing"]
    assert res["timings"]["one call"]["errors"][("sq4096", "v7:stream_k=true")] == pytest.approx(
        2.0 * 4096 ** 3 / 0.10e-3 / 1e12 / 760 - 1)


def test_back_to_back_rows_split_the_error_into_device_and_host(tmp_path):
    """A row measured back to back too (ours_b2b_us) is scored twice more: the model's calls back
    to back against that time, and the host's formula given the measured time as the device's.
    Here the device model is 20% slow (40 us predicted, 50 measured back to back); with the
    measured 50 us, the formula max(d + tail, min(pace, max(floor, call + d))) gives
    min(60, 10 + 50) = 60 us against the 52 us the events measured."""
    host = "host_call_us,host_floor_us,host_pace_us"
    measured = tmp_path / "measured.csv"
    measured.write_text("# host_probe: call_us=10 floor_us=20 pace_us=60 (the test's)\n"
                        f"name,m,n,k,batch,dtype,schedule,ours_tflops,ours_ms,ours_b2b_us,{host},correct\n"
                        "dec,64,4096,8192,1,float16,v7,165.2,0.052,50.0,10,20,60,True\n")
    predicted = _write(tmp_path / "predicted.csv",
                       "name,m,n,k,batch,dtype,schedule,predicted_ms,predicted_device_ms,predicted_queued_ms,kernels,gpu",
                       ["dec,64,4096,8192,1,float16,v7,0.05,0.040,0.040,1,h200-sxm"])
    t = score(predicted, measured)["timings"]
    assert t["back to back, measured so"]["errors"][("dec", "v7")] == pytest.approx(50 / 40 - 1)
    assert t["one call, each row's host, measured device"]["errors"][("dec", "v7")] == pytest.approx(52 / 60 - 1)


def test_back_to_back_held_by_the_gpu_is_scored_against_the_device_alone(tmp_path):
    """From make_table.HELD_B2B_SINCE on, the GPU waits for the host to queue the calls, so a
    short call's time back to back is its device's, not the host's pace: a row measured so is
    scored against predicted_device_ms (6 us), an older one against predicted_queued_ms (10.5 us,
    the host's)."""
    measured = tmp_path / "measured.csv"
    measured.write_text("name,m,n,k,batch,dtype,schedule,ours_tflops,ours_ms,ours_b2b_us,correct,date\n"
                        "sq512,512,512,512,1,float16,v7,13.4,0.020,5.0,True,2026-12-04T00:00:00\n"
                        "sq1024,1024,1024,1024,1,float16,v7,107,0.020,9.0,True,2026-12-02T00:00:00\n")
    predicted = _write(tmp_path / "predicted.csv",
                       "name,m,n,k,batch,dtype,schedule,predicted_ms,predicted_device_ms,predicted_queued_ms,kernels,gpu",
                       ["sq512,512,512,512,1,float16,v7,0.02,0.006,0.0105,1,h200-sxm",
                        "sq1024,1024,1024,1024,1,float16,v7,0.02,0.008,0.0105,1,h200-sxm"])
    errors = score(predicted, measured)["timings"]["back to back, measured so"]["errors"]
    assert errors[("sq512", "v7")] == pytest.approx(5.0 / 6.0 - 1)
    assert errors[("sq1024", "v7")] == pytest.approx(9.0 / 10.5 - 1)


def test_choices_back_to_back_compare_the_calls_back_to_back(tmp_path):
    """A sweep that timed each candidate's calls back to back beside cuBLAS's is also scored there:
    the model's fastest by its calls back to back (v7:cluster_m=2, 1.0x the cuBLAS timed after it)
    against the measured best (v7, 1.1x), whatever the one-call ratios say."""
    shape = "sq1024,1024,1024,1024,1,float16"
    measured = _write(tmp_path / "measured.csv", MEASURED_HEADER + ",ours_b2b_us,cublas_b2b_us", [
        f'{shape},v7,100,0.90,True,18.0,19.8',
        f'{shape},v7:cluster_m=2,110,1.10,True,20.0,20.0',
    ])
    predicted = _write(tmp_path / "predicted.csv", PREDICTED_HEADER + ",predicted_device_ms,predicted_queued_ms", [
        f'{shape},v7,0.030,0.016,0.021',
        f'{shape},v7:cluster_m=2,0.031,0.015,0.020',
    ])
    res = score(predicted, measured)
    (_, first, share), = res["choices_b2b"]
    assert first == "v7:cluster_m=2" and share == pytest.approx(1.0 / 1.1)
    (_, first, share), = res["choices"]               # by one call: v7 first, the ratio's best is the other
    assert first == "v7" and share == pytest.approx(0.90 / 1.10)


def test_one_call_rebuilt_from_the_device_time_alone():
    """A dependent launch's back-to-back time hides part of its launch under the call before;
    one call after an idle GPU pays it: the score adds the profile's saving back, for the models
    that took it off, and takes a prediction's own alone time where it carries one."""
    from experiments.score import alone_device_ms
    from sim.hardware import load_profile
    prof = load_profile("h200-sxm")
    saving = prof.dependent_launch_saving_us * 1e-3
    row = {"schedule": "v7", "predicted_device_ms": "0.030", "model_version": "2026.12-dependent-1"}
    assert alone_device_ms(row, prof) == pytest.approx(0.030 + saving)
    assert alone_device_ms({**row, "schedule": "v7:dependent_launch=false"}, prof) == pytest.approx(0.030)
    assert alone_device_ms({**row, "model_version": "2026.12-cluster-1"}, prof) == pytest.approx(0.030)
    assert alone_device_ms({**row, "predicted_alone_ms": "0.0325"}, prof) == pytest.approx(0.0325)
    assert alone_device_ms({**row, "predicted_alone_ms": "0.0325"}, prof, 0.029) == pytest.approx(0.029 + saving)


def test_by_shape_pools_the_rows_timed_back_to_back_over_files(tmp_path, capsys):
    """--by-shape: every correct row with a back-to-back time, from each file given, against the
    model's calls back to back; rows without that time, wrong ones and unpredicted ones left out.
    Two sweeps of one shape: 50 us measured against 40 predicted (the model 25% fast) and 30
    against 40 (25% slow)."""
    from experiments.score import b2b_errors, main
    header = MEASURED_HEADER + ",ours_b2b_us"
    shape = "dec,64,4096,8192,1,float16"
    first = _write(tmp_path / "sweep-1.csv", header, [f"{shape},v7,100,1.0,True,50.0",
                                                      f"{shape},v7:cluster_m=2,100,1.0,True,"])
    second = _write(tmp_path / "sweep-2.csv", header, [f"{shape},v7,100,1.0,True,30.0",
                                                       f"{shape},v7:cluster_m=2,100,1.0,False,20.0",
                                                       f"{shape},v7:block_n=176,100,1.0,True,20.0"])
    predicted = _write(tmp_path / "predicted.csv", PREDICTED_HEADER + ",predicted_device_ms,predicted_queued_ms", [
        f"{shape},v7,0.05,0.040,0.040", f"{shape},v7:cluster_m=2,0.05,0.040,0.040"])
    errors = b2b_errors(predicted, [first, second])
    assert [(n, s) for n, s, _ in errors] == [("dec", "v7"), ("dec", "v7")]
    assert [e for _, _, e in errors] == pytest.approx([50 / 40 - 1, 30 / 40 - 1])
    assert main(["--predicted", str(predicted), "--by-shape", "--measured", str(first), str(second)]) == 0
    out = capsys.readouterr().out
    assert "2 rows timed back to back" in out and "median |error|  25.0%" in out and "range  -25.0% ..  +25.0%" in out
