"""The per-SM L2 feed map and the block scheduler's SM order, from the load-only loops' stamps.
python -m experiments.research.sm_feed_map [--write]

Run 23 (`bash experiments/research/device.sh loop-stamps`) recorded every CTA's start, end and SM in
three WGMMA-free loops at the seed's tile (logs/run23/load_probes.npz): with no tensor work,
a CTA's life is the time its SM's L2 -> SM path takes for its 128 K tiles. Per SM, the mean
CTA duration over the mean of all SMs is that SM's feed factor (< 1: a faster feed); the
three loops' maps correlate 0.95-0.97, so the map is the hardware's, not the loop's. The
factor used is their mean. The dispatch order is the order in which SM ids first appear in
launch order (the block scheduler's placement of the first CTAs).

Prints the map; `--write` lays `l2_feed_by_sm` and `sm_dispatch_order` into
sim/profiles/h200-sxm.json (measured) and sim/profiles/h100-sxm.json (an assumed transfer:
same GH100 die; which SM ids are fast differs from chip to chip). No GPU needed.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from experiments.paths import REPO, logs_dir
from sim.hardware import write_profile_parameters

STAMPS = logs_dir() / "run23" / "load_probes.npz"


def feed_map(stamps: Path = STAMPS, sm_count: int = 132):
    """(per-SM feed factors, each loop's map, the dispatch order) from the clock probe's words
    (clock0, globaltimer0 ns, clock1, globaltimer1 ns, smid per CTA, launch order)."""
    probes = np.load(stamps)
    maps = {}
    for name in probes.files:
        rec = probes[name].astype(np.int64)
        sm, dur = rec[:, 4], (rec[:, 3] - rec[:, 1]).astype(float)
        per_sm = np.array([dur[sm == i].mean() for i in range(sm_count)])
        maps[name] = per_sm / per_sm.mean()
    first = probes[probes.files[0]][:, 4].astype(int).tolist()
    order = list(dict.fromkeys(first))
    if sorted(order) != list(range(sm_count)):
        raise ValueError(f"{stamps}: the launch did not reach all {sm_count} SMs")
    return np.mean(list(maps.values()), axis=0), maps, order


def write_profiles(feed, order, names=("h200-sxm", "h100-sxm")) -> None:
    source = (f"[measured] python -m experiments.research.sm_feed_map from {STAMPS.relative_to(REPO)} "
              "(run 23, NVIDIA H200, driver 580.159.04): per-SM mean CTA duration of the three "
              "128x128x64 load-only loops over the mean of all SMs, averaged over the loops "
              "(correlation between loops 0.95-0.97); dispatch order = SM ids in order of first "
              "appearance in launch order")
    for name in names:
        prov = source if name == "h200-sxm" else (
            "[assumed transfer] the H200's map (same GH100 die and 132-SM configuration); which SM "
            "ids are fast differs from chip to chip. " + source)
        path = write_profile_parameters(name, {"l2_feed_by_sm": [round(float(f), 4) for f in feed],
                                               "sm_dispatch_order": [int(i) for i in order]},
                                        {"l2_feed_by_sm": prov, "sm_dispatch_order": prov})
        print(f"wrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the map into sim/profiles/*.json")
    args = ap.parse_args(argv)
    feed, maps, order = feed_map()
    names = list(maps)
    corr = np.corrcoef([maps[n] for n in names])
    for i, n in enumerate(names):
        print(f"{n:32s} spread (std/mean) {maps[n].std():.3f}  corr with the others "
              + " ".join(f"{corr[i, j]:.2f}" for j in range(len(names)) if j != i))
    fast = np.where(feed < 0.9)[0]
    print(f"mean map: {len(fast)} SMs faster than 0.9 (ids {fast.tolist()}), mean of those "
          f"{feed[fast].mean():.3f}, of the rest {np.delete(feed, fast).mean():.3f}")
    print("first SMs in dispatch order:", order[:16])
    if args.write:
        write_profiles(feed, order)


if __name__ == "__main__":
    main()
