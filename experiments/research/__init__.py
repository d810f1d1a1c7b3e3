"""Finished studies: each module asked one question of the H200 (or of the model), ran on the
device (`bash experiments/research/device.sh <study>`), and left its records under
experiments/results/<gpu>/logs/ and its tables under experiments/results/<gpu>/. What each
found, and the prediction written before it ran, is in docs/research/. Nothing outside this
package imports it; its checks are experiments/research/tests/.
"""


def plain_launch(spec: str):
    """A study's schedule, launched plainly: the records before run 115 measured every kernel so,
    and a fixed cost is measured apart from a dependent launch's overlap with the call before
    (Schedule.dependent_launch; sim.call takes that saving off on its own)."""
    from gemm.schedule import from_spec
    return from_spec(spec).replace(dependent_launch=False)
