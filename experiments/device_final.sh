#!/usr/bin/env bash
# Device call: every GPU test on the final code (PTX primitives serially, matmul in parallel).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout 150 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q tests/test_gpu_ptx.py > "$OUT/pytest.log" 2>&1
timeout 300 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q -n 8 tests/test_gpu_matmul.py >> "$OUT/pytest.log" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -20
