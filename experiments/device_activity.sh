#!/usr/bin/env bash
# Device call (run 47): every counter of Nsight Compute's full set, per SM clock, for the
# kernels whose early clocks runs 38-46 measured (experiments/activity.py; NOTES 57).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NCU_OPTIONS="--set full --page raw" OUT=$OUT bash experiments/ncu_measured.sh - 480 \
  python3 -m experiments.activity --labels "$OUT/labels.json"
python3 -m experiments.activity --summarize "$OUT" --csv "$OUT/activity.csv" --top 30
