"""The one catalog of named schedules (experiments/catalog.py): its grammar and its sets."""
import pytest

from experiments import catalog
from gemm.schedule import preset


@pytest.mark.parametrize("short, long", [
    ("v1", "v1 128x128x64"), ("v2", "v2 128x128x64 s2"), ("v2 s3", "v2 128x128x64 s3"),
    ("v2-local", "v2 128x128x64 s2 local"), ("v1 128x192", "v1 128x192x64"), ("v3 s2", "v3 128x128x64 s2"),
    ("v5 128x256 s4", "v5 128x256x64 s4"),
])
def test_the_two_spellings_name_one_schedule(short, long):
    assert catalog.schedule(short) == catalog.schedule(long)


def test_words_set_the_presets_fields():
    assert catalog.schedule("v2 64x256 s2 row") == preset("v2", block_m=64, block_n=256, stages=2, raster="row")
    assert catalog.schedule("v3 bk32 s3") == preset("v3", block_k=32, stages=3)
    assert catalog.schedule("v1 64x128x16") == preset("v1", block_m=64, block_k=16)
    assert catalog.schedule("v5 128x256 s4 grouped").raster == "grouped"
    assert catalog.schedule("v5 64x128x128 s4 wg1") == preset("v5", block_m=64, block_n=128, block_k=128, stages=4,
                                                             consumer_warpgroups=1, raster="column")


def test_loops_pads_prefetch_and_aliases():
    e = catalog.entry("load loop 128x128x64 s1")
    assert (e.kind, e.schedule) == ("load", preset("v2", stages=1))
    assert catalog.entry("mma loop v5 128x128x64 s4") == catalog.Entry(
        preset("v5", block_n=128, raster="column", stages=4), "mma")
    # a record's name means the kernel it measured, whatever the preset became since
    assert catalog.schedule("v5 s3") == preset("v5", block_n=128, raster="column", stages=3)
    assert catalog.schedule("v5 128x256 s4").raster == "column"
    assert catalog.entry("v3 s2 +32KB smem").pad_bytes == 32 * 1024
    assert catalog.entry("v3 128x128x64 s6 prefetch 3").prefetch_limit == 3
    assert catalog.entry("v2 s2 @1") == catalog.Entry(preset("v2"), "gemm", 64 * 1024)


def test_the_bf16_word_sets_the_operands_type():
    e = catalog.entry("v7 bf16")
    assert e.schedule == preset("v7") and e.dtype == "bfloat16" and catalog.entry("v7").dtype == "float16"
    assert e.kernel_config().dtype == "bfloat16" and e.kernel_config("float16").dtype == "float16"


@pytest.mark.parametrize("name", ["", "v9", "s2 v2", "v2 fast", "v2 +32KB", "v2 128x128x64 s2 prefetch"])
def test_names_outside_the_grammar_are_refused(name):
    with pytest.raises(ValueError):
        catalog.entry(name)


def test_every_named_set_resolves_without_duplicates():
    for names in (catalog.GEMMS, catalog.CLOCK_PROBED, catalog.MMA_LOOPS, catalog.MMA_LOOPS_SMALL_TILES,
                  catalog.LOAD_LOOPS, catalog.PREFETCH, catalog.SEED_CASE, tuple(catalog.ALIASES)):
        assert len(set(names)) == len(names)
        table = catalog.schedules(names)
        assert list(table) == list(names)
    assert {catalog.entry(n).kind for n in catalog.MMA_LOOPS + catalog.MMA_LOOPS_SMALL_TILES} == {"mma"}
    assert {catalog.entry(n).kind for n in catalog.LOAD_LOOPS} == {"load"}


def test_a_ctas_clocks_per_k_tile_come_from_its_own_stamps():
    """calibrate_clock's cta_clk_per_k_tile: the median CTA's start-to-end clock64 over its K
    tiles (words: start clock, start ns, end clock, end ns, SM), whatever the others' spans."""
    from experiments.calibrate_clock import cta_clocks_per_k_tile
    records = [[1000, 0, 1000 + 12800, 0, 0], [5000, 0, 5000 + 25600, 0, 1], [0, 0, 12800, 0, 2]]
    assert cta_clocks_per_k_tile(records, 64) == 100.0          # 8192 / 64 = 128 K tiles
    assert cta_clocks_per_k_tile(records, 128) == 200.0
