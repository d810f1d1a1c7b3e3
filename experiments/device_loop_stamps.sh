#!/usr/bin/env bash
# Device call (run 23): every CTA's stamps of the load-only and WGMMA-only loops
# (experiments/NOTES.md item 25): does the CTAs' spread in time arise without the other half?
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 200 python3 -m experiments.calibrate_clock --load-loop --out "$OUT/load_loop_dump.csv" \
  --dump "$OUT/load_probes.npz" --match "load loop 128x128x64 s2" --match "load loop v3 128x128x64 s2" \
  --match "load loop v3 128x128x64 s3" 2>&1 | grep -E "^(load|Trace|.*Error)"
timeout 200 python3 -m experiments.calibrate_clock --mma-loop --out "$OUT/mma_loop_dump.csv" \
  --dump "$OUT/mma_probes.npz" --match "mma loop 128x128x64 s2" --match "mma loop v3 128x128x64 s2" \
  2>&1 | grep -E "^(mma|Trace|.*Error)"
ls "$OUT"
