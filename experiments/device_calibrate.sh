#!/usr/bin/env bash
# Device call: GPU tests, the in-kernel clock, and V1 vs V2 (both phase storages) at the seed's case.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash experiments/device_smoke.sh tests/test_gpu_matmul.py | grep -v PASSED
timeout 200 python3 -m experiments.calibrate_clock --out "$OUT/clock.csv" --profile "$OUT/h200-sxm.json" 2>&1 | tee "$OUT/clock.log"
timeout 240 python3 -m experiments.measure --seed-pair --log "$OUT/seed_pair.log" > /dev/null 2>&1
cat "$OUT/seed_pair.log"
