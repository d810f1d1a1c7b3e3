#!/usr/bin/env bash
# Device call for the warp-specialized kernels (V3-V5): a quick run of every version, the
# matmul GPU tests, the in-kernel clocks, the load-free and WGMMA-free loop microbenchmarks,
# every version at the seed's case taking turns, and the V1..V5 ladder at 8192^3, with the
# GPU's clock, power, temperature and throttle reasons sampled throughout (smi.csv).
# Eight files come back from $OUT (the device tool's limit); stdout is the short story.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
q=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$q --format=csv >/dev/null 2>&1 || q=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,$q --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
smi=$!
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
# a hang in a new pipeline would eat the call: one quick run of each version first
timeout 90 python3 -m experiments.sanitize_run > /tmp/quick.log 2>&1 || { echo "quick check failed"; tail -20 /tmp/quick.log; kill $smi; exit 1; }
grep -c " ok$" /tmp/quick.log
timeout 200 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q -n 8 tests/test_gpu_matmul.py > /tmp/pytest.log 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" /tmp/pytest.log | tail -30
timeout 150 python3 -m experiments.calibrate_clock --out "$OUT/clock.csv" 2>&1 | grep -E "^v"
timeout 100 python3 -m experiments.calibrate_clock --mma-loop --out "$OUT/mma_loop.csv" 2>&1 | grep -E "^mma"
timeout 100 python3 -m experiments.calibrate_clock --load-loop --out "$OUT/load_loop.csv" 2>&1 | grep -E "^load"
timeout 100 python3 -m experiments.measure --seed-pair --log "$OUT/seed_pair.log" > /dev/null 2>&1
cat "$OUT/seed_pair.log"
timeout 200 python3 -m experiments.measure --ladder --out "$OUT/ladder.csv" --log "$OUT/ladder.log" > /dev/null 2>&1
grep -E "^v" "$OUT/ladder.log" | cut -c1-120
kill $smi
