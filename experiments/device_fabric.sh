#!/usr/bin/env bash
# Device call (runs 29-30): the same-launch stamps and DRAM bytes again with a one-pass metric
# set (run 29), then the traffic between the two L2 partitions (run 30; 3 passes, aggregates).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/run29" "$OUT/run30"
export PYTHONUNBUFFERED=1
/usr/local/cuda/bin/ncu --nvtx --nvtx-include "measured/" --metrics dram__bytes_read.sum,gpu__time_duration.sum \
  --clock-control none --cache-control none python3 -m experiments.l2_capacity --labels /tmp/l.json 2>&1 \
  | grep -m1 -E "Profiling" || true   # how many passes this metric set needs
OUT=$OUT/run29 bash experiments/device_same_launch.sh
OUT=$OUT/run30 bash experiments/ncu_measured.sh \
  dram__bytes_read.sum,lts__t_sectors_srcunit_ltcfabric_op_read.sum,lts__t_sectors_srcunit_ltcfabric_op_read_lookup_hit.sum,lts__t_sectors_srcnode_gpc_op_read.sum,lts__t_sectors_srcnode_gpc_op_read_lookup_hit.sum 420 \
  python3 -m experiments.l2_same_launch --dump "$OUT/run30/probes.npz"
