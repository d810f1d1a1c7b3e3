#!/usr/bin/env bash
# The whole device session in one call: GPU tests, sanitizers, host overhead and the
# 8192^3 sweep. Full logs and the results CSV go to $OUT; a short table is printed last.
#   bash experiments/device_full.sh            (after the wheels line of shared/device/wheels.sh)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash experiments/device_smoke.sh tests/test_gpu_matmul.py
for tool in memcheck racecheck synccheck; do
  # --report-api-errors no: torch and cupy probe driver entry points that do not exist
  # (cuGetProcAddress errors), which are not kernel faults
  timeout 240 compute-sanitizer --tool "$tool" --report-api-errors no --print-limit 20 python3 -m experiments.sanitize_run \
    > "$OUT/sanitize-$tool.log" 2>&1
  echo "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log" | tail -1)" \
    "$(grep -c ' ok$' "$OUT/sanitize-$tool.log") cases ok, $(grep -c WRONG "$OUT/sanitize-$tool.log") wrong"
done
timeout 300 python3 -m experiments.measure --extra --host-overhead --out "$OUT/measured.csv" \
  --log "$OUT/measure.log" > /dev/null 2>&1
grep -E "host time|best per|^  v" "$OUT/measure.log"
