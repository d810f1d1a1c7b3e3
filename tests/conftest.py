"""GPU tests carry the `gpu` marker and are skipped where there is no Hopper GPU."""
import pytest


def _hopper_present() -> bool:
    try:
        from cuda.core import Device
        cc = Device().compute_capability
        return (cc.major, cc.minor) == (9, 0)
    except Exception:
        return False


HOPPER = _hopper_present()


def pytest_collection_modifyitems(config, items):
    if HOPPER:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA Hopper GPU (compute capability 9.0)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
