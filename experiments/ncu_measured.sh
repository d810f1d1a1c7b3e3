#!/usr/bin/env bash
# Profile only the launches a script wraps in an NVTX range "measured" (no cache flush, no
# clock lock: the kernel runs as it would unprofiled), writing $OUT/ncu.csv and $OUT/ncu.err.
# Usage: OUT=dir bash experiments/ncu_measured.sh METRICS TIMEOUT_S python3 -m module args...
# METRICS "-": no --metrics; give the counters in $NCU_OPTIONS instead (e.g. "--set full --page raw").
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
metrics=$1 limit=$2; shift 2
what=(); [ "$metrics" = "-" ] || what=(--metrics "$metrics")
# shellcheck disable=SC2086  # NCU_OPTIONS is a list of options
timeout "$limit" /usr/local/cuda/bin/ncu --nvtx --nvtx-include "measured/" "${what[@]}" ${NCU_OPTIONS:-} \
  --clock-control none --cache-control none --csv "$@" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu rc=$?"
tail -3 "$OUT/ncu.err"
grep -v '^"' "$OUT/ncu.csv" | tail -4
grep -c "pass" "$OUT/ncu.csv" || true
