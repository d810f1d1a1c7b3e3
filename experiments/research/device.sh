#!/usr/bin/env bash
# The finished studies' device calls, kept so that a run can be repeated: each subcommand is what
# ran on the H200 for the runs it names (docs/research/notes.md has the prediction written before
# each and its outcome; the records are experiments/results/h200-sxm/logs/runNN). Files go to $OUT.
#
#   bash experiments/research/device.sh depth-raster    run 15: ring depth at one CTA/SM (V3 s4-s6, V2 s4/s6, clocks
#                                                       read in the kernel) and the raster orders (rasters.csv)
#   bash experiments/research/device.sh prefetch        run 16: matmul tests and sanitizers, then V3 at one CTA/SM
#                                                       with the producer's lead capped (prefetch.csv)
#   bash experiments/research/device.sh hbm             run 17: Nsight Compute's DRAM and L2 bytes of each version
#   bash experiments/research/device.sh reuse           run 18: DRAM/L2 bytes of 18 kernels, every CTA's stamps of five
#   bash experiments/research/device.sh loadloop-hbm    runs 19-20: DRAM bytes of the WGMMA-free loops
#                                                       (HBM_ARGS=--k-sweep: V1, V2, V3 s3 over K instead)
#   bash experiments/research/device.sh same-launch [ARGS]  runs 22, 29, 57, 59: per-CTA stamps and DRAM bytes of the
#                                                       same launch (ARGS to l2_same_launch.py: --set drift, --set convoy)
#   bash experiments/research/device.sh loop-stamps     run 23: every CTA's stamps of the load-only and WGMMA-only loops
#   bash experiments/research/device.sh l2-capacity [panels]  runs 24-25 (run 55 with "panels"): the L2's capacity
#   bash experiments/research/device.sh fabric          runs 29-30: the same-launch stamps again, then the traffic
#                                                       between the two L2 partitions
#   bash experiments/research/device.sh activity [runNN]  runs 47-62 (default run48): Nsight Compute counters per SM
#                                                       clock (experiments/research/activity.py); see the case below
#
# The other studies' device steps are a single command each: python3 -m experiments.research.<study>
# --dump FILE.npz (clock_transient, launch_spread, power_draw, power_sweep, l2_sides, tma_latency,
# dependent_launch, gpc_stream, l2_loaded_latency).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OUT PYTHONUNBUFFERED=1
DEVICE="bash experiments/device.sh"

depth_raster() {
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
}

prefetch() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms 500 > "$OUT/smi.csv" 2>&1 &
  smi=$!
  timeout 90 python3 -m experiments.sanitize_run > "$OUT/quick.log" 2>&1 \
    || { echo "quick check failed"; tail "$OUT/quick.log"; kill $smi; exit 1; }
  timeout 150 python3 -m experiments.calibrate_clock --prefetch --out "$OUT/prefetch.csv" 2>&1 | grep -E "^v"
  timeout 100 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q tests/test_gpu_ptx.py > "$OUT/pytest.log" 2>&1
  timeout 200 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q -n 8 tests/test_gpu_matmul.py \
    >> "$OUT/pytest.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -20
  OUT=$OUT $DEVICE sanitize | tee "$OUT/sanitize.log"
  kill $smi
}

hbm() {
  timeout 120 python3 -m pytest -p no:cacheprovider -rfE --tb=short -q tests/test_gpu_matmul.py -k prefetch \
    > "$OUT/pytest.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -5
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  echo "ncu: ${NCU:-none}"
  [ -n "$NCU" ] && timeout 300 "$NCU" --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum \
    --kernel-name regex:"^(serial|ring|specialized)_kernel" --csv python3 -m experiments.research.hbm_bytes \
    > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  tail -3 "$OUT/ncu.err"
  grep -E "dram__bytes_read|lts__t_bytes" "$OUT/ncu.csv" | awk -F'","' '{print $5, $(NF-2), $(NF-1), $NF}' | cut -c1-160
}

reuse() {
  timeout 150 python3 -m experiments.calibrate_clock --out "$OUT/clock_dump.csv" --dump "$OUT/probes.npz" \
    --match "v1 128x128x64" --match "v2 128x128x64 s2" --match "v2 128x128x64 s3" \
    --match "v3 128x128x64 s2" --match "v3 128x128x64 s3" 2>&1 | grep -E "^v"
  timeout 300 /usr/local/cuda/bin/ncu --metrics dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
    --kernel-name regex:"^(serial|ring|specialized)_kernel" --csv python3 -m experiments.research.hbm_bytes \
    > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  tail -2 "$OUT/ncu.err"
  grep -c dram__bytes_read "$OUT/ncu.csv"
}

loadloop_hbm() {
  timeout 300 /usr/local/cuda/bin/ncu --metrics dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum \
    --kernel-name regex:"^(load_loop|serial|ring|specialized)_kernel" --csv python3 -m experiments.research.hbm_bytes \
    ${HBM_ARGS:---load-loop} > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  tail -2 "$OUT/ncu.err"
  grep -c dram__bytes_read "$OUT/ncu.csv"
}

same_launch() {
  # one replay pass only: with more metrics Nsight Compute replays the kernel (3 passes for
  # dram + lts + time) and the stamps would be those of another pass than the bytes
  OUT=$OUT $DEVICE ncu dram__bytes_read.sum,gpu__time_duration.sum 420 \
    python3 -m experiments.research.l2_same_launch --dump "$OUT/probes.npz" "$@"
  grep -c dram__bytes_read "$OUT/ncu.csv"
  grep dram__bytes_read "$OUT/ncu.csv" | awk -F'","' '{print $NF}'
}

loop_stamps() {
  timeout 200 python3 -m experiments.calibrate_clock --load-loop --out "$OUT/load_loop_dump.csv" \
    --dump "$OUT/load_probes.npz" --match "load loop 128x128x64 s2" --match "load loop v3 128x128x64 s2" \
    --match "load loop v3 128x128x64 s3" 2>&1 | grep -E "^(load|Trace|.*Error)"
  timeout 200 python3 -m experiments.calibrate_clock --mma-loop --out "$OUT/mma_loop_dump.csv" \
    --dump "$OUT/mma_probes.npz" --match "mma loop 128x128x64 s2" --match "mma loop v3 128x128x64 s2" \
    2>&1 | grep -E "^(mma|Trace|.*Error)"
  ls "$OUT"
}

l2_capacity() {
  OUT=$OUT $DEVICE ncu dram__bytes_read.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum 400 \
    python3 -m experiments.research.l2_capacity --labels "$OUT/labels.json" ${1:+--panels}
  python3 -m experiments.research.l2_capacity --summarize "$OUT"
}

fabric() {
  mkdir -p "$OUT/run29" "$OUT/run30"
  /usr/local/cuda/bin/ncu --nvtx --nvtx-include "measured/" --metrics dram__bytes_read.sum,gpu__time_duration.sum \
    --clock-control none --cache-control none python3 -m experiments.research.l2_capacity --labels /tmp/l.json 2>&1 \
    | grep -m1 -E "Profiling" || true   # how many passes this metric set needs
  OUT=$OUT/run29 same_launch
  OUT=$OUT/run30 $DEVICE ncu \
    dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric_op_read.sum,lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum,lts__t_sectors_srcnode_gpc_op_read.sum,lts__t_sectors_srcnode_gpc_op_read_lookup_hit.sum 420 \
    python3 -m experiments.research.l2_same_launch --dump "$OUT/run30/probes.npz"
}

# Runs 47-62 (experiments/research/activity.py; docs/research/notes.md 57-79):
#   run47: every counter of Nsight Compute's full set, per SM clock, for the kernels whose
#          early clocks runs 38-46 measured, ranked against those clocks;
#   run48: the few counters of activity.METRICS (one or two passes) for the calibration,
#          held-out and top-clock kernels; the clock form fitted and tested;
#   run49: the same counters for launches 0, 30, 120 and 240 of 250 back to back after a rest
#          (V1, V2, V2-local, V3 s2, V3 s3), each beside the clock the profile's form gives it;
#   run50: the same with launches 100 and 200 profiled (the first after the controller's fall);
#   run51: the load-only loops on operands that fit in L2 (activity.L2_RESIDENT): the port's hit rate;
#   run52: V2 and V3 rings at 1-3 CTAs per SM and 2-6 stages (activity.RESIDENCY): which lose L2 reuse;
#   run53: the same kernels on operands whose rows are 128 B longer (activity.STRIDES): set conflicts?
#   run54: V1, V2, V2-local, V2 s3, V3 s2, V3 s3 in a grouped raster (activity.GROUPED);
#   run56: the L2-resident loops plain and on rows 128 B longer (activity.L2_RESIDENT_STRIDES);
#   run58: sim/convoy.py's held-out GEMMs (activity.CONVOY), four launches each;
#   run61: sim/convoy.py's bytes off 8192^3 (activity.SHAPES: K = 16384, 12288 x 12288), four each;
#   run62: the held kernels over 64-384 K steps per CTA (activity.LEAK), four each.
activity() {
  local mode=${1:-run48} metrics what n at
  metrics=$(python3 -c 'from experiments.research.activity import METRICS; print(METRICS)')
  case "$mode" in
    run47)
      NCU_OPTIONS="--set full --page raw" OUT=$OUT $DEVICE ncu - 480 \
        python3 -m experiments.research.activity --labels "$OUT/labels.json" --kernels run47
      python3 -m experiments.research.activity --summarize "$OUT" --csv "$OUT/activity.csv" --top 30 ;;
    run49|run50)
      at=0,30,120,240; [ "$mode" = run50 ] && at=100,200
      NCU_OPTIONS="--page raw" OUT=$OUT $DEVICE ncu "$metrics" 300 \
        python3 -m experiments.research.activity --labels "$OUT/labels.json" --sequence --profile-at $at
      python3 -m experiments.research.activity --check "$OUT" --csv "$OUT/sequence.csv" ;;
    run51|run52|run53|run54|run56|run58|run61|run62)
      case "$mode" in
        run51) what=--l2-resident; n=3 ;;
        run52) what=--residency; n=5 ;;
        run53) what=--strides; n=4 ;;
        run54) what=--grouped; n=4 ;;
        run56) what=--l2-resident-strides; n=4 ;;
        run58) what=--convoy; n=4 ;;
        run61) what=--shapes; n=4 ;;
        run62) what=--leak; n=4 ;;
      esac
      NCU_OPTIONS="--page raw" OUT=$OUT $DEVICE ncu "$metrics" 300 \
        python3 -m experiments.research.activity --labels "$OUT/labels.json" $what --repeat $n
      python3 -m experiments.research.activity --check "$OUT" ;;
    *)
      NCU_OPTIONS="--page raw" OUT=$OUT $DEVICE ncu "$metrics" 480 \
        python3 -m experiments.research.activity --labels "$OUT/labels.json" --kernels run48 --repeat 3
      python3 -m experiments.research.fit_clock_form "$OUT" --csv "$OUT/clock_form.csv" ;;
  esac
}

cmd=${1:-}; shift || true
case "$cmd" in
  depth-raster) depth_raster ;;
  prefetch) prefetch ;;
  hbm) hbm ;;
  reuse) reuse ;;
  loadloop-hbm) loadloop_hbm ;;
  same-launch) same_launch "$@" ;;
  loop-stamps) loop_stamps ;;
  l2-capacity) l2_capacity "$@" ;;
  fabric) fabric ;;
  activity) activity "$@" ;;
  *) sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; [ -z "$cmd" ] || { echo "unknown subcommand: $cmd"; exit 2; } ;;
esac
