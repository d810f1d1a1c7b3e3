"""The shipped dispatch table: measured best schedules by shape bucket, one JSON file per GPU.

A rule covers a half-octave bucket of M, N and K (and the batch and dtype): a shape whose
log2(M), log2(N), log2(K), rounded to halves, equal the rule's takes its schedule. Shapes whose
rows TMA cannot address (K or N x 2 bytes not a multiple of 16: the call copies them, and a C
stored by TMA goes through a padded stand-in, gemm/padding.py) have rules of their own, and so
do shapes whose operands' lines start off 128-byte lines (`lines_off`: a box row then straddles
two L2 lines, which costs tiles unlike one another, gemm.limits.line_start). The
tables are data, made by `python -m experiments.make_table` from a measured sweep
(experiments/results/<gpu>/sweep.csv); a shape in no bucket goes to the model.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from ..limits import INPUT_BYTES, line_start, tma_row_aligned

TABLES = Path(__file__).with_name("tables")


def bucket(x: int) -> float:
    """The half-octave bucket of a dimension: round(2 log2 x) / 2."""
    return round(2 * math.log2(max(1, x))) / 2


def padded(n: int, k: int) -> bool:
    """Whether a contiguous product of this shape has rows TMA cannot address: K x 2 bytes (A's
    and W's rows) or N x 2 bytes (C's) not a multiple of 16. Its call copies them, which can
    favour a different tile there than at its aligned neighbours (odd4095 against sq4096)."""
    return not (tma_row_aligned(k) and tma_row_aligned(n))


def contiguous_lines_off(n: int, k: int) -> bool:
    """Whether a contiguous product's operands (A [M, K] and B^T [N, K], rows K x 2 bytes apart from
    128-byte-aligned bases, as the bench lays them out) have lines that start off 128-byte lines.
    Rows TMA cannot address are copied onto 128-byte lines first."""
    return not padded(n, k) and line_start(k * INPUT_BYTES) != "line"


def shape_key(m: int, n: int, k: int, batch: int, dtype: str, lines_off: bool = False) -> tuple:
    return (bucket(m), bucket(n), bucket(k), bucket(batch), dtype, padded(n, k), lines_off)


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
               rule.get("padded", False), rule.get("lines_off", False))
        rules[key] = (rule["schedule"], rule.get("measured", ""))
    return rules


def lookup(gpu: str, m: int, n: int, k: int, batch: int, dtype: str, lines_off: bool = False):
    """(schedule spec, source note) of the shape's bucket's rule for operands whose lines start on
    128-byte lines, or (`lines_off`) off them; None if the table has no such rule."""
    return load(gpu).get(shape_key(m, n, k, batch, dtype, lines_off))
