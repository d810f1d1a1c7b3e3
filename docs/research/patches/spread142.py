"""Per-CTA stamps of the decode kernels back to back: how the launch's span splits into the
start spread, the CTAs' own time and the end spread, and the gap between one launch's last
CTA and the next one's first; beside the same bytes copied and reduced by torch."""
import sys
import numpy as np
import torch
import cupy
from gemm.kernels import KernelConfig
from gemm.kernels.tiles import PROBE_WORDS
from gemm.launch import launch_gemm, load_kernel
from gemm.schedule import from_spec
from gemm.dispatch import choose

CASES = [("dec1-down", 1, 4096, 11008), ("dec16-down", 16, 4096, 11008), ("dec64-down", 64, 4096, 11008),
         ("dec128-down", 128, 4096, 11008), ("dec1-up", 1, 22016, 4096), ("dec64-up", 64, 22016, 4096)]
N_B2B = 40


def _compile(spec):
    from gemm.compile import compile_kernel
    k = compile_kernel(KernelConfig(from_spec(spec), "float16", "k", "k", clock_probe=True))
    return f"{spec} regs {k.registers} spill {k.spill_bytes}"


def b2b_us(fn, reps=N_B2B, rounds=5):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(rounds):
        for _ in range(5):
            fn()
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e) * 1e3 / reps)
    return float(np.median(out))


def main():
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing as mp
    specs = sorted({choose(m, n, k, 1, "float16").schedule.name for _, m, n, k in CASES})
    with ProcessPoolExecutor(8, mp_context=mp.get_context("spawn")) as ex:
        for line in ex.map(_compile, specs):
            print(line, flush=True)

    for name, m, n, k in CASES:
        spec = choose(m, n, k, 1, "float16").schedule.name
        s = from_spec(spec)
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(m, k, generator=g, device="cuda").half()
        w = torch.randn(n, k, generator=g, device="cuda").half()
        out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        loaded = load_kernel(KernelConfig(s, "float16", "k", "k", clock_probe=True))
        if s.swap_ab:
            gm, gn = n, m
            args = lambda probe: (loaded, w.data_ptr(), k, a.data_ptr(), k, out.data_ptr(), n, n, m, k)
        else:
            gm, gn = m, n
            args = lambda probe: (loaded, a.data_ptr(), k, w.data_ptr(), k, out.data_ptr(), n, m, n, k)
        ctas = loaded.config.grid(gm, gn, loaded.resident_clusters)[0]
        probes = [cupy.zeros((ctas, PROBE_WORDS), dtype=cupy.uint64) for _ in range(2)]
        stream = torch.cuda.current_stream().cuda_stream
        state = {"i": 0}

        def launch():
            p = probes[state["i"] % 2]
            state["i"] += 1
            launch_gemm(*args(p), stream, p.data.ptr)

        for _ in range(5):
            launch()
        torch.cuda.synchronize()
        ref = a.float() @ w.float().T
        err = float((out.float() - ref).abs().max() / ref.abs().max())
        t_ours = b2b_us(launch)
        state["i"] = 0
        for _ in range(N_B2B):
            launch()
        torch.cuda.synchronize()
        prev, last = probes[0].get().astype(np.int64), probes[1].get().astype(np.int64)   # launches 38, 39
        t0 = last[:, 1].min()
        starts = (last[:, 1] - t0) / 1e3
        ends = np.sort((last[:, 3] - t0) / 1e3)
        gap = (t0 - prev[:, 3].max()) / 1e3
        dur = (last[:, 3] - last[:, 1]) / 1e3
        wbytes = n * k * 2
        dst = torch.empty_like(w)
        t_copy = b2b_us(lambda: dst.copy_(w))
        t_amax = b2b_us(lambda: torch.amax(w))
        q = lambda x, p: float(np.percentile(x, p))
        print(f"{name:11s} {ctas:3d} CTAs err {err:.1e} | b2b ours {t_ours:6.2f} us ({wbytes / t_ours / 1e3:5.0f} GB/s) "
              f"copy {t_copy:6.2f} ({2 * wbytes / t_copy / 1e3:5.0f} r+w) amax {t_amax:6.2f} ({wbytes / t_amax / 1e3:5.0f}) | "
              f"gap prev-last-end -> first-start {gap:5.2f} | starts p50/p90/max {q(starts,50):.2f}/{q(starts,90):.2f}/"
              f"{starts.max():.2f} | dur p10/p50/p90 {q(dur,10):.2f}/{q(dur,50):.2f}/{q(dur,90):.2f} | ends p10/p50/p90/max "
              f"{q(ends,10):.2f}/{q(ends,50):.2f}/{q(ends,90):.2f}/{ends[-1]:.2f}  [{spec}]", flush=True)
        np.savez(f"{sys.argv[1]}/{name}.npz", prev=prev, last=last)


if __name__ == "__main__":
    main()


def memory_rates():
    """HBM ceilings by torch's own kernels, back to back: write-only (fill), read-only (amax),
    copy, on 268 MB (attn-b32-2048-k128's C) and 1 GiB."""
    for nbytes in (268435456, 1 << 30):
        x = torch.empty(nbytes // 2, dtype=torch.float16, device="cuda").normal_()
        y = torch.empty_like(x)
        w = b2b_us(lambda: y.fill_(1.0), reps=10)
        r = b2b_us(lambda: torch.amax(x), reps=10)
        c = b2b_us(lambda: y.copy_(x), reps=10)
        print(f"{nbytes / 1e6:6.0f} MB: fill {nbytes / w / 1e3:5.0f} GB/s, amax {nbytes / r / 1e3:5.0f}, "
              f"copy {2 * nbytes / c / 1e3:5.0f} (r+w)", flush=True)
        del x, y


if __name__ == "__main__" and len(sys.argv) > 2:
    memory_rates()
