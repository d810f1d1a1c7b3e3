#!/usr/bin/env bash
# Device call (run 18): DRAM/L2 bytes of 18 kernels (Nsight Compute) and every CTA's start,
# end and SM for five kernels at the seed's tile (experiments/NOTES.md item 19).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 150 python3 -m experiments.calibrate_clock --out "$OUT/clock_dump.csv" --dump "$OUT/probes.npz" \
  --match "v1 128x128x64" --match "v2 128x128x64 s2" --match "v2 128x128x64 s3" \
  --match "v3 128x128x64 s2" --match "v3 128x128x64 s3" 2>&1 | grep -E "^v"
timeout 300 /usr/local/cuda/bin/ncu --metrics dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
  --kernel-name regex:"^(serial|ring|specialized)_kernel" --csv python3 -m experiments.hbm_bytes \
  > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
tail -2 "$OUT/ncu.err"
grep -c dram__bytes_read "$OUT/ncu.csv"
