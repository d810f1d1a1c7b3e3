"""docs/model.md's parameter table is what the profiles give (python -m sim.docs --write)."""
import dataclasses

from sim import docs
from sim.hardware import GpuProfile


def test_model_doc_table_is_current():
    text = docs.DOC.read_text()
    assert docs.rewrite(text) == text, "python -m sim.docs --write"


def test_every_parameter_says_what_it_is_and_where_it_comes_from():
    kinds = {"datasheet", "measured", "paper", "assumed", "derived"}
    for f in dataclasses.fields(GpuProfile):
        if f.name == "name":
            continue
        meta = GpuProfile.source(f.name)
        assert meta["tag"] in kinds and meta["what"], f.name
        if meta["tag"] == "measured":
            assert meta["source"], f.name   # a measured value names its measurement
    table = docs.table()
    assert all(f"`{f.name}`" in table for f in dataclasses.fields(GpuProfile) if f.name != "name")
