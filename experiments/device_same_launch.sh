#!/usr/bin/env bash
# Device call (runs 22, 29, 57, 59): per-CTA stamps and DRAM bytes of the same launch
# (experiments/l2_same_launch.py; arguments pass on to it: none = its 11 kernels, for the LRU
# replay of experiments/l2_replay.py; --set drift = run 57, --set convoy = run 59, for
# experiments/drift.py).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# one replay pass only: with more metrics Nsight Compute replays the kernel (3 passes for
# dram + lts + time) and the stamps would be those of another pass than the bytes
OUT=$OUT bash experiments/ncu_measured.sh dram__bytes_read.sum,gpu__time_duration.sum 420 \
  python3 -m experiments.l2_same_launch --dump "$OUT/probes.npz" "$@"
grep -c dram__bytes_read "$OUT/ncu.csv"
grep dram__bytes_read "$OUT/ncu.csv" | awk -F'","' '{print $NF}'
