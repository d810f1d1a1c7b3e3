#!/usr/bin/env bash
# Device call (run 17): the prefetch tests with the test's K fixed, and Nsight Compute's DRAM
# and L2 bytes for one launch of each version (experiments/NOTES.md item 18).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 120 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q tests/test_gpu_matmul.py -k prefetch \
  > "$OUT/pytest.log" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -5
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
[ -n "$NCU" ] && timeout 300 "$NCU" --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum \
  --kernel-name regex:"^(serial|ring|specialized)_kernel" --csv python3 -m experiments.hbm_bytes \
  > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
tail -3 "$OUT/ncu.err"
grep -E "dram__bytes_read|lts__t_bytes" "$OUT/ncu.csv" | awk -F'","' '{print $5, $(NF-2), $(NF-1), $NF}' | cut -c1-160
