#!/usr/bin/env bash
# Device call (run 22): per-CTA stamps and DRAM bytes of the same launch for 11 kernels
# (experiments/l2_same_launch.py), for the LRU replay of experiments/l2_replay.py.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# one replay pass only: with more metrics Nsight Compute replays the kernel (3 passes for
# dram + lts + time) and the stamps would be those of another pass than the bytes
OUT=$OUT bash experiments/ncu_measured.sh dram__bytes_read.sum,gpu__time_duration.sum 420 \
  python3 -m experiments.l2_same_launch --dump "$OUT/probes.npz"
grep -c dram__bytes_read "$OUT/ncu.csv"
grep dram__bytes_read "$OUT/ncu.csv" | awk -F'","' '{print $NF}'
