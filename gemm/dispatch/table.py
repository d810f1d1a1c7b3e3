"""The shipped dispatch table: measured best schedules by shape bucket, one JSON file per GPU.

A rule covers a half-octave bucket of M, N and K (and the batch and dtype): a shape whose
log2(M), log2(N), log2(K), rounded to halves, equal the rule's takes its schedule. Shapes whose
rows TMA cannot address (K or N x 2 bytes not a multiple of 16: the call copies them, and a C
stored by TMA goes through a padded stand-in, gemm/padding.py) have rules of their own. The
tables are data, made by `python -m experiments.make_table` from a measured sweep
(experiments/results/<gpu>/sweep.csv); a shape in no bucket goes to the model.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from ..limits import tma_row_aligned

TABLES = Path(__file__).with_name("tables")


def bucket(x: int) -> float:
    """The half-octave bucket of a dimension: round(2 log2 x) / 2."""
    return round(2 * math.log2(max(1, x))) / 2


def padded(n: int, k: int) -> bool:
    """Whether a contiguous product of this shape has rows TMA cannot address: K x 2 bytes (A's
    and W's rows) or N x 2 bytes (C's) not a multiple of 16. Its call copies them, which can
    favour a different tile there than at its aligned neighbours (odd4095 against sq4096)."""
    return not (tma_row_aligned(k) and tma_row_aligned(n))


def shape_key(m: int, n: int, k: int, batch: int, dtype: str) -> tuple:
    return (bucket(m), bucket(n), bucket(k), bucket(batch), dtype, padded(n, k))


@lru_cache(maxsize=None)
def load(gpu: str) -> dict:
    """{shape_key: (schedule spec, what the rule says of its source)} for one GPU, {} if no table."""
    path = TABLES / f"{gpu}.json"
    if not path.exists():
        return {}
    table = json.loads(path.read_text())
    rules = {}
    for rule in table["rules"]:
        key = (rule["m_bucket"], rule["n_bucket"], rule["k_bucket"], rule["batch_bucket"], rule["dtype"],
               rule.get("padded", False))
        rules[key] = (rule["schedule"], rule.get("measured", ""))
    return rules


def lookup(gpu: str, m: int, n: int, k: int, batch: int, dtype: str):
    """(schedule spec, source note) for the shape's bucket, or None."""
    return load(gpu).get(shape_key(m, n, k, batch, dtype))
