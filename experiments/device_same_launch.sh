#!/usr/bin/env bash
# Device call (run 22): per-CTA stamps and DRAM bytes of the same launch for 11 kernels
# (experiments/l2_same_launch.py), for the LRU replay of experiments/l2_replay.py.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 420 /usr/local/cuda/bin/ncu --nvtx --nvtx-include "measured/" \
  --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
  --clock-control none --cache-control none --csv \
  python3 -m experiments.l2_same_launch --dump "$OUT/probes.npz" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu rc=$?"
tail -3 "$OUT/ncu.err"
grep -v '^"' "$OUT/ncu.csv" | tail -12
grep -c dram__bytes_read "$OUT/ncu.csv"
grep dram__bytes_read "$OUT/ncu.csv" | awk -F'","' '{print $NF}'
