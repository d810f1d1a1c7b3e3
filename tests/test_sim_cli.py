"""The command line: python -m sim.run."""
import json
import subprocess
import sys


def run(*args):
    return subprocess.run([sys.executable, "-m", "sim.run", *args], capture_output=True, text=True, timeout=60)


def test_help():
    r = run("--help")
    assert r.returncode == 0 and "--sync-per-iter" in r.stdout and "--trace" in r.stdout


def test_default_is_the_seed_case_and_json_parses():
    r = run("--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"ms", "tflops", "utilization", "ctas_per_sm", "waves", "bound"} <= set(d)
    assert {"tensor", "tma", "hbm"} <= set(d["utilization"])
    assert d["gpu"] == "h100-sxm" and d["schedule"]["name"] == "v2"
    assert (d["schedule"]["block_m"], d["schedule"]["block_n"], d["schedule"]["block_k"]) == (128, 128, 64)
    assert d["schedule"]["stages"] == 2 and d["shape"] == {"m": 8192, "n": 8192, "k": 8192, "dtype": "float16"}
    same = json.loads(run("--json", "--sync-per-iter", "2").stdout)
    assert same["tflops"] == d["tflops"]


def test_flags_override_the_version():
    d = json.loads(run("--json", "--version", "v3", "--stages", "3", "--gpu", "h200-sxm").stdout)
    assert d["schedule"]["family"] == "specialized" and d["schedule"]["stages"] == 3 and d["gpu"] == "h200-sxm"


def test_text_report():
    r = run("--version", "v1", "--stages-table")
    assert r.returncode == 0
    for word in ("TFLOPS", "tensor cores", "CTA(s)/SM", "bound", "stages"):
        assert word in r.stdout


def test_stages_table_json_reports_the_trade():
    d = json.loads(run("--json", "--stages-table").stdout)
    rows = {r["stages"]: r for r in d["stages_table"]}
    assert {1, 2, 3, 4} <= set(rows)
    assert rows[2]["ctas_per_sm"] == 3 and rows[4]["ctas_per_sm"] == 1  # 32 KB a stage
    assert all(r["tflops"] > 0 and r["bound"] for r in rows.values())


def test_trace(tmp_path):
    f = tmp_path / "t.json"
    r = run("--version", "v1", "--k", "1024", "--trace", str(f))
    assert r.returncode == 0, r.stderr
    ev = json.loads(f.read_text())["traceEvents"]
    cats = {e.get("cat") for e in ev if e["ph"] == "X"}
    assert {"tma", "wgmma", "sync", "tma_wait"} <= cats
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"warpgroup 0", "tensor cores", "TMA engine"} <= names


def test_impossible_schedule_is_a_clear_error():
    r = run("--block", "128x256x64")
    assert r.returncode == 2 and "accumulator registers" in r.stderr and "Traceback" not in r.stderr
    r = run("--stages", "9")
    assert r.returncode == 2 and "shared memory" in r.stderr and "Traceback" not in r.stderr
    r = run("--block", "bad")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_hbm_read_what_if():
    """--hbm-read-gb replaces the model's HBM estimate (say, by Nsight Compute's count) and says so."""
    base = json.loads(run("--json", "--version", "v1").stdout)  # held in convoy: 1.77 GB per wave
    r = run("--json", "--version", "v1", "--hbm-read-gb", "3.98")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["bytes"]["hbm_read_bytes"] == int(3.98e9) and d["bytes"]["l2_hit_rate"] < base["bytes"]["l2_hit_rate"]
    assert d["tflops"] < base["tflops"] and any("what-if" in n for n in d["notes"])
    bad = run("--hbm-read-gb", "100")
    assert bad.returncode == 2 and "hbm_read_bytes" in bad.stderr


def test_earned_clock():
    """--earned-clock runs at the clock the schedule's own activity earns (sim/clock.py), says so,
    and refuses a second clock."""
    r = run("--json", "--version", "v1", "--earned-clock")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["clock_ghz"] != json.loads(run("--json", "--version", "v1").stdout)["clock_ghz"]
    assert any("earned" in n for n in d["notes"])
    bad = run("--earned-clock", "--clock-ghz", "1.2")
    assert bad.returncode == 2 and "give one" in bad.stderr


def test_grid_timeline():
    """--grid-timeline runs every CTA of the grid; its HBM bytes replace the per-wave estimate
    and it says so. A smaller grid keeps this quick."""
    r = run("--json", "--grid-timeline", "--m", "4096", "--n", "4096", "--k", "2048", "--gpu", "h200-sxm")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    g = d["grid_timeline"]
    # A and B (32 MiB) fit in L2 here: the timeline reads them once, the per-wave figure per wave
    assert d["bytes"]["hbm_read_bytes"] == g["hbm_read_bytes"] >= 2 * 4096 * 2048 * 2
    assert g["hbm_read_bytes"] < g["per_wave_hbm_read_bytes"]
    assert g["span_ms"] > 0 and g["prefetch_depth"] == 2 and any("GPU-wide timeline" in n for n in d["notes"])
    text = run("--grid-timeline", "--m", "4096", "--n", "4096", "--k", "2048").stdout
    assert "GPU-wide" in text and "spread" in text
    both = run("--grid-timeline", "--hbm-read-gb", "3")
    assert both.returncode == 2 and "give one" in both.stderr and "Traceback" not in both.stderr
    bad = run("--grid-timeline", "--block", "128x256x64")
    assert bad.returncode == 2 and "accumulator registers" in bad.stderr


def test_convoy_is_the_default_and_per_wave_a_flag():
    """By default the HBM bytes come from sim/convoy.py: the seed's V2 runs free (more HBM bytes
    than per wave, and says why), V1 is held in convoy. --per-wave counts every panel once per
    wave and says what that assumes (for a ring whose loads run 2+ K steps ahead, not V1); it
    sets the HBM bytes, so it refuses --hbm-read-gb."""
    ring = json.loads(run("--json").stdout)
    per_wave = json.loads(run("--json", "--per-wave").stdout)
    assert ring["bytes"]["hbm_read_bytes"] > 2 * per_wave["bytes"]["hbm_read_bytes"]
    assert any("free-running" in n for n in ring["notes"]) and ring["tflops"] < per_wave["tflops"]
    assert any("HBM bytes per wave" in n for n in per_wave["notes"])
    assert not any("HBM bytes per wave" in n for n in ring["notes"])
    v1 = json.loads(run("--json", "--version", "v1").stdout)
    assert any("held in convoy" in n for n in v1["notes"])
    v1_per_wave = json.loads(run("--json", "--version", "v1", "--per-wave").stdout)
    assert v1_per_wave["tflops"] == v1["tflops"] and not any("HBM bytes per wave" in n for n in v1_per_wave["notes"])
    both = run("--per-wave", "--hbm-read-gb", "3")
    assert both.returncode == 2 and "give one" in both.stderr and "Traceback" not in both.stderr


def test_a_flag_at_the_presets_value_is_still_the_preset():
    """`--sync-per-iter 2` is the seed's case: the report names it v2, not a custom schedule."""
    assert json.loads(run("--json", "--sync-per-iter", "2").stdout)["schedule"]["name"] == "v2"
    assert json.loads(run("--json", "--sync-per-iter", "0").stdout)["schedule"]["name"] == "v2+custom"
