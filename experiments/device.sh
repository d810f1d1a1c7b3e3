#!/usr/bin/env bash
# The device driver: one subcommand is one call's worth of work on a machine with an H100/H200
# and the project installed. Logs and result files go to $OUT (default /tmp/out); stdout is the
# short story.
#
#   bash experiments/device.sh smoke [PYTEST ARGS]   GPU facts, each PTX primitive test by name, then pytest ARGS
#   bash experiments/device.sh tests                 every GPU test: PTX primitives serially, matmul in parallel
#   bash experiments/device.sh sanitize              compute-sanitizer memcheck, racecheck, synccheck on a V1-V5
#                                                    workload with edge tiles (experiments/sanitize_run.py)
#   bash experiments/device.sh full                  smoke + the matmul tests, sanitize, then the 8192^3 sweep with
#                                                    host overhead (measured.csv)
#   bash experiments/device.sh calibrate             the matmul tests, the in-kernel clock into the profile
#                                                    (clock.csv, h200-sxm.json), every version at the seed's case
#   bash experiments/device.sh versions              V1..V5: a quick run of each, the matmul tests, the clocks, the
#                                                    load-free and WGMMA-free loops, the seed pair, the ladder
#                                                    (measured_ladder.csv), nvidia-smi sampled throughout (smi.csv)
#   bash experiments/device.sh torch                 the torch client: gemm.torch_ops' GPU tests and the decoder
#                                                    block timed against torch (experiments/torch_client.py)
#   bash experiments/device.sh ncu METRICS TIMEOUT_S CMD..
#                                                    Nsight Compute on the launches CMD wraps in the NVTX range
#                                                    "measured" ($OUT/ncu.csv, ncu.err; METRICS "-": the counters
#                                                    are in $NCU_OPTIONS, e.g. "--set full --page raw")
#
# The finished studies' device calls are experiments/research/device.sh.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OUT

smoke() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$OUT/gpu.txt"
  timeout 240 python3 -m pytest -p no:cacheprovider -rfE --tb=short -v tests/test_gpu_ptx.py > "$OUT/ptx.log" 2>&1
  grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/ptx.log" | sed 's/.*::/  /' | tail -45
  if [ $# -gt 0 ]; then
    timeout 400 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q -n 8 "$@" > "$OUT/pytest.log" 2>&1
    grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -30
  fi
}

tests() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
  timeout 150 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q tests/test_gpu_ptx.py > "$OUT/pytest.log" 2>&1
  timeout 300 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q -n 8 -m gpu tests \
    --ignore=tests/test_gpu_ptx.py >> "$OUT/pytest.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -20
}

sanitize() {
  for tool in memcheck racecheck synccheck; do
    # --report-api-errors no: torch and cupy probe driver entry points that do not exist
    # (cuGetProcAddress errors), which are not kernel faults
    timeout 240 compute-sanitizer --tool "$tool" --report-api-errors no --print-limit 20 \
      python3 -m experiments.sanitize_run > "$OUT/sanitize-$tool.log" 2>&1
    echo "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log" | tail -1)" \
      "$(grep -c ' ok$' "$OUT/sanitize-$tool.log") cases ok, $(grep -c WRONG "$OUT/sanitize-$tool.log") wrong"
  done
}

full() {
  smoke tests/test_gpu_matmul.py
  sanitize
  timeout 300 python3 -m experiments.measure --extra --host-overhead --out "$OUT/measured.csv" \
    --log "$OUT/measure.log" > /dev/null 2>&1
  grep -E "host time|best per|^  v" "$OUT/measure.log"
}

calibrate() {
  smoke tests/test_gpu_matmul.py | grep -v PASSED
  timeout 200 python3 -m experiments.calibrate_clock --out "$OUT/clock.csv" --profile "$OUT/h200-sxm.json" 2>&1 \
    | tee "$OUT/clock.log"
  timeout 240 python3 -m experiments.measure --seed-pair --log "$OUT/seed_pair.log" > /dev/null 2>&1
  cat "$OUT/seed_pair.log"
}

# nvidia-smi sampling the clock, power, temperature and throttle reasons every 500 ms into $OUT/smi.csv
# until stop_smi; the field is clocks_event_reasons on newer drivers, clocks_throttle_reasons before
start_smi() {
  local q=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
  nvidia-smi --query-gpu=$q --format=csv >/dev/null 2>&1 || q=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active
  nvidia-smi --query-gpu=timestamp,$q --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
  SMI=$!
}
stop_smi() { kill "$SMI"; }

versions() {
  start_smi
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
  # a hang in a new pipeline would eat the call: one quick run of each version first
  timeout 90 python3 -m experiments.sanitize_run > /tmp/quick.log 2>&1 \
    || { echo "quick check failed"; tail -20 /tmp/quick.log; stop_smi; exit 1; }
  grep -c " ok$" /tmp/quick.log
  timeout 200 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q -n 8 tests/test_gpu_matmul.py > /tmp/pytest.log 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" /tmp/pytest.log | tail -30
  timeout 150 python3 -m experiments.calibrate_clock --out "$OUT/clock.csv" 2>&1 | grep -E "^v"
  timeout 100 python3 -m experiments.calibrate_clock --mma-loop --out "$OUT/mma_loop.csv" 2>&1 | grep -E "^mma"
  timeout 100 python3 -m experiments.calibrate_clock --load-loop --out "$OUT/load_loop.csv" 2>&1 | grep -E "^load"
  timeout 100 python3 -m experiments.measure --seed-pair --log "$OUT/seed_pair.log" > /dev/null 2>&1
  cat "$OUT/seed_pair.log"
  timeout 200 python3 -m experiments.measure --ladder --out "$OUT/measured_ladder.csv" --log "$OUT/ladder.log" \
    > /dev/null 2>&1
  grep -E "^v" "$OUT/ladder.log" | cut -c1-120
  stop_smi
}

torch_client() {
  timeout 300 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q tests/test_gpu_torch.py tests/test_torch_ops.py \
    > "$OUT/pytest.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -20
  timeout 240 python3 -m experiments.torch_client 2>&1 | tee "$OUT/torch_client.log"
}

# Profile only the launches a script wraps in an NVTX range "measured" (no cache flush, no clock
# lock: the kernel runs as it would unprofiled), writing $OUT/ncu.csv and $OUT/ncu.err.
ncu() {
  local metrics=$1 limit=$2; shift 2
  local what=(); [ "$metrics" = "-" ] || what=(--metrics "$metrics")
  # shellcheck disable=SC2086  # NCU_OPTIONS is a list of options
  timeout "$limit" /usr/local/cuda/bin/ncu --nvtx --nvtx-include "measured/" "${what[@]}" ${NCU_OPTIONS:-} \
    --clock-control none --cache-control none --csv "$@" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  echo "ncu rc=$?"
  tail -3 "$OUT/ncu.err"
  grep -v '^"' "$OUT/ncu.csv" | tail -4
  grep -c "pass" "$OUT/ncu.csv" || true
}

cmd=${1:-}; shift || true
case "$cmd" in
  smoke) smoke "$@" ;;
  tests) tests ;;
  sanitize) sanitize ;;
  full) full ;;
  calibrate) calibrate ;;
  versions) versions ;;
  torch) torch_client ;;
  ncu) ncu "$@" ;;
  *) sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; [ -z "$cmd" ] || { echo "unknown subcommand: $cmd"; exit 2; } ;;
esac
