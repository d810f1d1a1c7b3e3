#!/usr/bin/env bash
# Device calls 47-56 (experiments/activity.py; NOTES 57-69). Usage: bash experiments/device_activity.sh [run47|...|run56]
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
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
mode=${1:-run48}
if [ "$mode" = run47 ]; then
  NCU_OPTIONS="--set full --page raw" OUT=$OUT bash experiments/ncu_measured.sh - 480 \
    python3 -m experiments.activity --labels "$OUT/labels.json" --kernels run47
  python3 -m experiments.activity --summarize "$OUT" --csv "$OUT/activity.csv" --top 30
elif [ "$mode" = run49 ] || [ "$mode" = run50 ]; then
  at=0,30,120,240; [ "$mode" = run50 ] && at=100,200
  metrics=$(python3 -c 'from experiments.activity import METRICS; print(METRICS)')
  NCU_OPTIONS="--page raw" OUT=$OUT bash experiments/ncu_measured.sh "$metrics" 300 \
    python3 -m experiments.activity --labels "$OUT/labels.json" --sequence --profile-at $at
  python3 -m experiments.activity --check "$OUT" --csv "$OUT/sequence.csv"
elif [ "$mode" = run51 ] || [ "$mode" = run52 ] || [ "$mode" = run53 ] || [ "$mode" = run54 ] || [ "$mode" = run56 ] || [ "$mode" = run58 ] || [ "$mode" = run61 ] || [ "$mode" = run62 ]; then
  metrics=$(python3 -c 'from experiments.activity import METRICS; print(METRICS)')
  what=--l2-resident; n=3; [ "$mode" = run52 ] && what=--residency && n=5; [ "$mode" = run53 ] && what=--strides && n=4
  [ "$mode" = run54 ] && what=--grouped && n=4
  [ "$mode" = run56 ] && what=--l2-resident-strides && n=4
  [ "$mode" = run58 ] && what=--convoy && n=4
  [ "$mode" = run61 ] && what=--shapes && n=4
  [ "$mode" = run62 ] && what=--leak && n=4
  NCU_OPTIONS="--page raw" OUT=$OUT bash experiments/ncu_measured.sh "$metrics" 300 \
    python3 -m experiments.activity --labels "$OUT/labels.json" $what --repeat $n
  python3 -m experiments.activity --check "$OUT"
else
  metrics=$(python3 -c 'from experiments.activity import METRICS; print(METRICS)')
  NCU_OPTIONS="--page raw" OUT=$OUT bash experiments/ncu_measured.sh "$metrics" 480 \
    python3 -m experiments.activity --labels "$OUT/labels.json" --kernels run48 --repeat 3
  python3 -m experiments.fit_clock_form "$OUT" --csv "$OUT/clock_form.csv"
fi
