#!/usr/bin/env bash
# One device call's worth of checks: GPU facts, the PTX primitive tests (serially,
# each named), then the pytest arguments given. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$OUT/gpu.txt"
timeout 240 python3 -m pytest -p no:cacheprovider -rfE --tb=short -v tests/test_gpu_ptx.py > "$OUT/ptx.log" 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/ptx.log" | sed 's/.*::/  /' | tail -45
if [ $# -gt 0 ]; then
  timeout 400 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q -n 8 "$@" > "$OUT/pytest.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -30
fi
