#!/usr/bin/env bash
# Device call (run 24): the L2's capacity as an LRU sees it (experiments/l2_capacity.py):
# DRAM bytes of two sweeps in one launch over buffers of 8-96 MiB, under Nsight Compute.
# `bash experiments/device_l2_capacity.sh panels` (run 55): the GEMM's panel pattern instead.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
OUT=$OUT bash experiments/ncu_measured.sh dram__bytes_read.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum 400 \
  python3 -m experiments.l2_capacity --labels "$OUT/labels.json" ${1:+--panels}
python3 -m experiments.l2_capacity --summarize "$OUT"
