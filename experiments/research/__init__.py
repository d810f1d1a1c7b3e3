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


def check_and_time(points, repeats: int, calls: int, rest_s: float) -> tuple[dict, dict]:
    """What the pairwise studies (cluster_coupling, last_round) measure of each (spec, M, N, K) in
    `points`: first every output against float64, poisoned with NaN before the call (a wrong one
    raises); then the call's device time back to back (experiments.timing.back_to_back_us, `calls`
    calls) after the GPU rested `rest_s`, the points interleaved over `repeats` rounds, the order
    turning each round. ({"spec@MxNxK": max rel err}, {"spec@MxNxK": [us per call, a round each]})."""
    import time

    import torch

    import gemm
    from experiments.bench import _operands
    from experiments.timing import back_to_back_us
    from gemm.schedule import from_spec
    sets = {(m, n, k): [_operands(dict(m=m, n=n, k=k, batch=1, dtype="float16"), seed) for seed in range(2)]
            for _, m, n, k in points}
    errors = {}
    for spec, m, n, k in points:
        a, b = sets[(m, n, k)][0]
        out = torch.full((m, n), float("nan"), dtype=a.dtype, device=a.device)
        c = gemm.matmul(a, b, schedule=from_spec(spec), out=out)
        ref = a.double() @ b.double()
        err = (c.double() - ref).abs().max().item() / ref.abs().max().item()
        if not torch.isfinite(c).all() or err > 1e-2:
            raise RuntimeError(f"{spec} at {m}x{n}x{k}: wrong (max rel err {err:.2e})")
        errors[f"{spec}@{m}x{n}x{k}"] = err
    times = {f"{spec}@{m}x{n}x{k}": [] for spec, m, n, k in points}
    for r in range(repeats):
        for spec, m, n, k in (points if r % 2 == 0 else points[::-1]):
            sch, ops = from_spec(spec), sets[(m, n, k)]
            time.sleep(rest_s)
            times[f"{spec}@{m}x{n}x{k}"].append(
                back_to_back_us(lambda i: gemm.matmul(*ops[i % len(ops)], schedule=sch), calls=calls))
    return errors, times
