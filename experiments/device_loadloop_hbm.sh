#!/usr/bin/env bash
# Device call (run 19; run 20 with HBM_ARGS=--k-sweep): Nsight Compute DRAM bytes of the WGMMA-free loops, the microbenchmark
# whose rows set the model's L2 parameters (were their L2 hit rates what the model assumed?).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 300 /usr/local/cuda/bin/ncu --metrics dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
  --kernel-name regex:"^(load_loop|serial|ring|specialized)_kernel" --csv python3 -m experiments.hbm_bytes ${HBM_ARGS:---load-loop} \
  > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
tail -2 "$OUT/ncu.err"
grep -c dram__bytes_read "$OUT/ncu.csv"
