#!/usr/bin/env bash
# Device call (run 15): ring depth at one CTA/SM (V3 s4-s6, V2 s4/s6, clocks read in the
# kernel) and the raster orders, on the GEMMs and on the WGMMA-free loop (experiments/NOTES.md
# item 15). Five files come back from $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
q=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=timestamp,$q --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
smi=$!
timeout 150 python3 -m experiments.calibrate_clock --out "$OUT/clock.csv" --match "v3 128x128x64 s" \
  --match "v2 128x128x64 s4" --match "v2 128x128x64 s6" --match "v1 128x128x64" 2>&1 | grep -E "^v"
timeout 100 python3 -m experiments.calibrate_clock --load-loop --out "$OUT/load_loop.csv" --match 64x --match 128x192 \
  2>&1 | grep -E "^load"
timeout 200 python3 -m experiments.measure --rasters --out "$OUT/rasters.csv" --log "$OUT/rasters.log" > /dev/null 2>&1
grep -E "^v" "$OUT/rasters.log" | cut -c1-110
kill $smi
