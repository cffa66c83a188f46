#!/usr/bin/env python3
"""First-call and warm-cache times of the ready ops, on a machine with an NVIDIA GPU and a tessel
package with its compiler (the installed wheel): each case runs in a new process twice with one
fresh on-disk cache, so the first process compiles every kernel the op needs and the second finds
them on disk. Per case it prints the first call of each process (compile or cache load, module
load, launch, synchronize) and a later call in the same process (everything in memory).

    op_compile_times.py [--cases attention,attention-bwd,...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def _inputs(torch, shape, grad=False):
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    return x.requires_grad_(grad)


def _attention(torch, tessel, backward):
    q, k, v = (_inputs(torch, (1, 8, 1000, 128), backward) for _ in range(3))
    o = tessel.attention(q, k, v, causal=True)
    if backward:
        o.float().sum().backward()


def _lean(torch, tessel, paged):
    q = _inputs(torch, (2, 8, 1, 128))
    k, v = (_inputs(torch, (2, 8, 5000, 128)) for _ in range(2))
    if not paged:
        tessel.lean_attention(q, k, v)
        return
    page, pages = 64, 2 * 79
    cache = [_inputs(torch, (pages, page, 8, 128)) for _ in range(2)]
    table = torch.arange(pages, device="cuda", dtype=torch.int32).reshape(2, 79)
    lens = torch.tensor([5000, 3001], device="cuda", dtype=torch.int32)
    tessel.lean_attention(q, cache[0], cache[1], seq_lens=lens, block_table=table)


def _kl(torch, tessel, backward):
    qt, kt = (_inputs(torch, (1, 4, 1000, 128)) for _ in range(2))  # the teacher: no gradient
    qs, ks = (_inputs(torch, (1, 4, 1000, 128), backward) for _ in range(2))
    kl = tessel.attention_kl(qt, kt, qs, ks, causal=True)
    if backward:
        kl.backward()


def _mta(torch, tessel, backward):
    q, k, v = (_inputs(torch, (1, 4, 700, 64), backward) for _ in range(3))
    w = torch.randn((4, 1, 6, 11), device="cuda", requires_grad=backward)
    o = tessel.mta_attention(q, k, v, w)
    if backward:
        o.float().sum().backward()


def _mta_decode(torch, tessel):
    q = _inputs(torch, (1, 4, 6, 64))
    k, v = (_inputs(torch, (1, 4, 3000, 64)) for _ in range(2))
    tessel.mta_decode(q, k, v, torch.randn((4, 1, 6, 11), device="cuda"))


CASES = {
    "attention": lambda t, ts: _attention(t, ts, False),
    "attention-bwd": lambda t, ts: _attention(t, ts, True),
    "lean_attention": lambda t, ts: _lean(t, ts, False),
    "lean_attention-paged": lambda t, ts: _lean(t, ts, True),
    "attention_kl": lambda t, ts: _kl(t, ts, False),
    "attention_kl-bwd": lambda t, ts: _kl(t, ts, True),
    "mta_attention": lambda t, ts: _mta(t, ts, False),
    "mta_attention-bwd": lambda t, ts: _mta(t, ts, True),
    "mta_decode": _mta_decode,
}


def child(case):
    """One process: the op's first call, then a later one; JSON on stdout."""
    import torch
    import tessel
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    times = []
    for _ in range(2):
        torch.cuda.synchronize()
        start = time.perf_counter()
        CASES[case](torch, tessel)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    entries = os.listdir(os.environ["TESSEL_CACHE_DIR"])
    print(json.dumps({"first": times[0], "later": times[1],
                      "bundles": sum(e.endswith(".bundle") for e in entries)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    import tessel
    if not tessel._tessel.has_compiler:
        print(f"this tessel has no compiler: {tessel._tessel.compiler_error}")
        return 1
    print(f"tessel {tessel.__version__} from {os.path.dirname(tessel.__file__)}")
    print("| op (bf16) | kernels | first call, cold cache | first call, warm cache | later call |")
    print("|---|---|---|---|---|")
    failed = 0
    for case in args.cases.split(","):
        runs = []
        with tempfile.TemporaryDirectory(prefix="tessel-cache-") as cache:
            env = dict(os.environ, TESSEL_CACHE_DIR=cache)
            env.pop("TESSEL_BUNDLE_DIR", None)
            for _ in range(2):
                proc = subprocess.run([sys.executable, __file__, "--child", case], env=env,
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"| {case} | failed: {proc.stderr.strip().splitlines()[-1:]} |")
                    failed += 1
                    break
                runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        if len(runs) == 2:
            cold, warm = runs
            print(f"| {case} | {cold['bundles']} | {cold['first']:.2f} s | "
                  f"{warm['first'] * 1e3:.0f} ms | {cold['later'] * 1e3:.2f} ms |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
