"""The copies of matrices whose lines TMA cannot address (gemm/padding.py: an operand into
padded lines, a padded result into C's rows): the package's copy kernel against the driver's
pitched copy (cudaMemcpy2DAsync), each timed back to back (20 copies between two CUDA events,
after 5), in GB/s moved (read + written).

  python -m experiments.research.pad_copy [--csv experiments/results/h200-sxm/pad_copy.csv]
  python -m experiments.research.pad_copy --profile experiments/results/h200-sxm/pad_copy.csv
      # -> the model's line_copy_gb_per_s (sim/profiles/h200-sxm.json), no GPU needed

The copy is checked against its source first, every element. The model's rate is the median
over the cases of 60 MB or more (a GEMM's operands; the skinny case is short lines' own limit).
Measuring needs the H200.
"""
from __future__ import annotations

import argparse
from pathlib import Path

# (lines, width, ld, offset, dst_ld, what): a matrix of `lines` lines of `width` 2-byte
# elements, `ld` apart, starting `offset` elements into its buffer, copied into lines dst_ld
# apart (None: padded to 16 bytes)
CASES = [
    (4095, 4099, 4099, 0, None, "odd4095's A (4095 x 4099, row-major)"),
    (4097, 4099, 4099, 0, None, "odd4095's W (B = W.T: columns of 4099)"),
    (8191, 8193, 8193, 0, None, "an 8191 x 8193 operand"),
    (22016, 4095, 4095, 0, None, "a 22016 x 4095 weight"),
    (11008, 4096, 4104, 1, None, "a view one element into 11008 x 4104 rows"),
    (262144, 7, 7, 0, None, "a skinny operand: lines of 7 elements"),
    (4095, 4097, 4104, 0, 4097, "odd4095's C: padded rows packed into 4097"),
]


def _time_us(fn, calls=20, warmup=5) -> float:
    import cupy
    for _ in range(warmup):
        fn()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) * 1e3 / calls


def measure(lines: int, width: int, ld: int, offset: int, dst_ld: int | None) -> dict:
    import cupy
    import numpy as np

    from gemm.padding import LineCopy, launch_copy, pitch_for
    pitch = dst_ld or pitch_for(width)
    rng = np.random.default_rng(lines + width)
    buffer = cupy.asarray(rng.integers(0, 1 << 16, size=lines * ld + offset, dtype=np.uint16))
    src = buffer[offset:offset + lines * ld].reshape(lines, ld)
    dst = cupy.empty((lines, pitch), dtype=cupy.uint16)
    stream = cupy.cuda.get_current_stream().ptr
    copy = LineCopy(src.data.ptr, ld, 0, dst.data.ptr, pitch, lines, width)
    dst.fill(0x7E01)
    launch_copy(copy, stream)
    if not (bool((dst[:, :width] == src[:, :width]).all()) and bool((dst[:, width:] == 0).all())):
        raise AssertionError(f"the copy kernel's copy of {lines} x {width} is wrong")
    nbytes = 2 * lines * width * 2        # read and written
    kernel_us = _time_us(lambda: launch_copy(copy, stream))
    runtime = cupy.cuda.runtime
    driver_us = _time_us(lambda: runtime.memcpy2DAsync(dst.data.ptr, pitch * 2, src.data.ptr, ld * 2, width * 2,
                                                       lines, runtime.memcpyDeviceToDevice, stream))
    return {"lines": lines, "width": width, "ld": ld, "offset": offset, "dst_ld": pitch,
            "mbytes": round(nbytes / 1e6, 2),
            "kernel_us": round(kernel_us, 2), "kernel_gb_per_s": round(nbytes / kernel_us / 1e3),
            "memcpy2d_us": round(driver_us, 2), "memcpy2d_gb_per_s": round(nbytes / driver_us / 1e3)}


MODEL_MBYTES = 60


def write_profile(csv_path: Path, gpu: str = "h200-sxm", profiles_dir: Path | None = None) -> float:
    """Set the profile's line_copy_gb_per_s from a measured pad_copy.csv."""
    import csv
    import statistics

    from sim.hardware import write_profile_parameters
    rows = list(csv.DictReader(line for line in csv_path.open() if not line.startswith("#")))
    rates = [float(r["kernel_gb_per_s"]) for r in rows if float(r["mbytes"]) >= MODEL_MBYTES]
    rate = statistics.median(rates)
    write_profile_parameters(gpu, {"line_copy_gb_per_s": round(rate)}, {
        "line_copy_gb_per_s": f"[measured] python -m experiments.research.pad_copy --profile {csv_path}: the "
                              f"copy kernel's read + written bytes per second, the median over its {len(rates)} "
                              f"cases of {MODEL_MBYTES} MB or more ({', '.join(f'{r:.0f}' for r in rates)} GB/s)"},
                             profiles_dir)
    return rate


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", type=Path, help="write the rows here")
    ap.add_argument("--profile", type=Path, metavar="CSV", help="set the model's copy rate from this file")
    args = ap.parse_args(argv)
    if args.profile:
        print(f"line_copy_gb_per_s = {write_profile(args.profile):.0f}")
        return 0
    rows = []
    for lines, width, ld, offset, dst_ld, what in CASES:
        row = measure(lines, width, ld, offset, dst_ld) | {"what": what}
        rows.append(row)
        print(f"{what:48s} {row['mbytes']:8.1f} MB  kernel {row['kernel_us']:8.1f} us "
              f"{row['kernel_gb_per_s']:5d} GB/s   memcpy2D {row['memcpy2d_us']:8.1f} us "
              f"{row['memcpy2d_gb_per_s']:5d} GB/s", flush=True)
    if args.csv:
        from experiments.measure import provenance
        from experiments.paths import write_csv
        meta = provenance()
        write_csv(args.csv, rows, [f"measured by python -m experiments.research.pad_copy --csv {args.csv}"]
                  + [f"{k}: {v}" for k, v in meta.items()]
                  + ["protocol: 20 copies back to back between two CUDA events after 5, each way; "
                     "GB/s = (read + written bytes) / time"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
