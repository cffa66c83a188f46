"""Compiles and runs the tutorial kernels next to this file (vector add, fused softmax, matmul)
with the installed `tessel` package: on the GPU when there is one (PyTorch CUDA tensors), else on
the CPU interpreter (NumPy arrays). Each result is checked against NumPy in float64; the script
prints, per kernel, the first compile (cold: the on-disk cache is a fresh directory unless
TESSEL_CACHE_DIR is set), the compile again from the warm cache, and the error.

    python3 examples/tutorials/run.py [--cpu]

Exits non-zero when a result is wrong.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

import tessel

HERE = os.path.dirname(os.path.abspath(__file__))


def compile_twice(name, constants, interpret):
    """(kernel, cold seconds, warm seconds): the second compile finds the first one's entry in the
    on-disk cache, as a new process would."""
    path = os.path.join(HERE, f"{name}.tsl")
    start = time.perf_counter()
    kernel = tessel.compile(path, constants, interpret=interpret)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    again = tessel.compile(path, constants, interpret=interpret)
    warm = time.perf_counter() - start
    assert again.cache_hit, f"{name}: the second compile missed the cache"
    return kernel, cold, warm


def cases(rng, on_gpu):
    """(kernel, constants, inputs, outputs, grid, reference) per tutorial; smaller on the CPU."""
    n = 1_000_003 if on_gpu else 10_007
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    yield ("vector_add", {"BLOCK": 1024}, [x, y], [np.zeros(n, np.float32)],
           lambda: (tessel.cdiv(n, 1024),), [n], lambda: x.astype(np.float64) + y)

    rows, cols = (4096, 781) if on_gpu else (37, 781)
    s = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    s[0, :] = 80.0  # a row whose exponentials overflow without the max subtracted

    def softmax():
        e = np.exp(s.astype(np.float64) - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    yield ("softmax", {"BLOCK": 1024}, [s], [np.zeros_like(s)], lambda: (rows,), [cols, cols],
           softmax)

    M, N, K = (2000, 1000, 1030) if on_gpu else (130, 70, 90)
    block = {"BM": 128, "BN": 128, "BK": 64} if on_gpu else {"BM": 64, "BN": 64, "BK": 32}
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    yield ("matmul", block, [a, b], [np.zeros((M, N), np.float32)],
           lambda: (tessel.cdiv(M, block["BM"]), tessel.cdiv(N, block["BN"])), [M, N, K],
           lambda: a.astype(np.float64) @ b.astype(np.float64))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="the CPU interpreter even with a GPU")
    args = parser.parse_args()
    if "TESSEL_CACHE_DIR" not in os.environ:
        os.environ["TESSEL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tessel-tutorials-")
    on_gpu = not args.cpu and tessel.gpu.has_gpu()
    if on_gpu:
        import torch
        print(f"on the GPU: {torch.cuda.get_device_name()} (target {tessel.gpu.target()})")
    else:
        print("on the CPU interpreter" + ("" if args.cpu else " (no GPU found)"))
    print(f"tessel {tessel.__version__} from {os.path.dirname(tessel.__file__)}")
    rng = np.random.default_rng(0)
    failed = 0
    for name, constants, inputs, outputs, grid, scalars, reference in cases(rng, on_gpu):
        kernel, cold, warm = compile_twice(name, constants, interpret=not on_gpu)
        if on_gpu:
            device = [torch.from_numpy(t).cuda() for t in inputs + outputs]
            kernel[grid()](*device, *scalars)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(20):
                kernel[grid()](*device, *scalars)
            end.record()
            torch.cuda.synchronize()
            run = f", {start.elapsed_time(end) / 20 * 1e3:.1f} us a launch"
            got = device[len(inputs)].cpu().numpy()
        else:
            kernel[grid()](*inputs, *outputs, *scalars)
            run = ""
            got = outputs[0]
        want = reference()
        err = float(np.max(np.abs(got - want)))
        rel = err / max(float(np.max(np.abs(want))), 1e-30)
        ok = rel < (2e-3 if name == "matmul" else 1e-5)
        failed += not ok
        print(f"{name:11s} compile {cold * 1e3:7.1f} ms cold, {warm * 1e3:5.1f} ms warm{run}; "
              f"max abs err {err:.2e} (rel {rel:.2e}) {'ok' if ok else 'WRONG'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
