#!/usr/bin/env bash
# Device call (run 16): the final code's matmul GPU tests and sanitizers, and V3 at one CTA/SM
# with the producer's lead capped below the ring's depth (experiments/NOTES.md item 17).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
smi=$!
timeout 90 python3 -m experiments.sanitize_run > "$OUT/quick.log" 2>&1 || { echo "quick check failed"; tail "$OUT/quick.log"; kill $smi; exit 1; }
timeout 150 python3 -m experiments.calibrate_clock --prefetch --out "$OUT/prefetch.csv" 2>&1 | grep -E "^v"
timeout 100 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q tests/test_gpu_ptx.py > "$OUT/pytest.log" 2>&1
timeout 200 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q -n 8 tests/test_gpu_matmul.py \
  >> "$OUT/pytest.log" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -20
for tool in racecheck synccheck memcheck; do
  timeout 100 compute-sanitizer --tool "$tool" --report-api-errors no --print-limit 20 python3 -m experiments.sanitize_run \
    > /tmp/sanitize.tmp 2>&1
  echo "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/sanitize.tmp | tail -1)" \
    "$(grep -c ' ok$' /tmp/sanitize.tmp) cases ok, $(grep -c WRONG /tmp/sanitize.tmp) wrong" | tee -a "$OUT/sanitize.log"
  cat /tmp/sanitize.tmp >> "$OUT/sanitize.log"
done
kill $smi
