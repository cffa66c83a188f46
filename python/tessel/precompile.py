"""Precompiles the ready ops' GPU kernels into a bundle directory, for machines whose tessel has
no compiler (a runtime-only build on a GPU machine without LLVM/MLIR):

    python -m tessel.precompile --out bundles/ [--target sm_90|sm_90a] [--head-dims 64,128]
                                [--dtypes f16,bf16] [--mta 6x11,3x5] [--jobs N]
    python -m tessel.precompile --out bundles/ --source my.tsl [--kernel NAME] [-D NAME=VALUE ...]

then, on the GPU machine, TESSEL_BUNDLE_DIR=bundles/ makes tessel.attention(...) & co. find them.
The second form compiles one kernel of your own (as tessel.precompile(path, constants, ...) does
from Python) instead of the ops'; -D values are DSL text (64, True, bf16; None for a pointer
parameter the kernel is compiled without).
Already present bundles are kept (their names are keys of everything that determines them).
"""

import argparse
import concurrent.futures
import os
import sys

from . import ops
from .compiler import jit, precompile


def _pairs(text):
    try:
        return tuple(tuple(int(x) for x in item.split("x")) for item in text.split(",") if item)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected CQxCK[,CQxCK...], got {text!r}") from None


def _ints(text):
    try:
        return tuple(int(x) for x in text.split(",") if x)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N[,N...], got {text!r}") from None


def _constant(text):
    """A -D value as the Python value tessel.precompile takes."""
    if text in ("True", "False"):
        return text == "True"
    if text == "None":                            # a pointer compiled without a buffer
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text                                   # an element type name: f16, bf16, ...


def precompile_ops(out_dir, target="sm_90", head_dims=(64, 128), dtypes=("f16", "bf16"),
                   mta_windows=((6, 11),), jobs=None, log=None):
    """Compiles every ops.gpu_configurations(...) kernel into `out_dir`; returns the paths."""
    configs = ops.gpu_configurations(head_dims, dtypes, mta_windows, target)
    kernels = {}
    for tsl, name, _, stream_k in configs:
        kernels.setdefault((tsl, name, stream_k), jit(os.path.join(ops.KERNELS_DIR, tsl),
                                                      kernel=name, stream_k=stream_k))

    def one(config):
        tsl, name, constants, stream_k = config
        path = kernels[(tsl, name, stream_k)].precompile(target=target, out_dir=out_dir,
                                                         **constants)
        if log:
            log(f"{name} {constants} -> {os.path.basename(path)}")
        return path

    # The compiler releases the GIL: threads compile in parallel.
    with concurrent.futures.ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(one, configs))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tessel.precompile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the bundle directory to fill")
    parser.add_argument("--target", default="sm_90", choices=("sm_80", "sm_90", "sm_90a"))
    parser.add_argument("--head-dims", type=_ints, default=(64, 128))
    parser.add_argument("--dtypes", default="f16,bf16")
    parser.add_argument("--mta", type=_pairs, default=((6, 11),), help="MTA windows CQxCK,...")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--source", help="a .tsl file: precompile one of its kernels instead")
    parser.add_argument("--kernel", help="with --source: the kernel (if the file has several)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                        help="with --source: a constexpr value")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.source:
        constants = {}
        for define in args.defines:
            name, eq, value = define.partition("=")
            if not eq or not name:
                parser.error(f"-D expects NAME=VALUE, got {define!r}")
            constants[name] = _constant(value)
        path = precompile(args.source, constants, args.kernel, args.target, args.out)
        print(path)
        return 0
    if args.defines or args.kernel:
        parser.error("-D and --kernel go with --source")
    dtypes = tuple(d for d in args.dtypes.split(",") if d)
    unknown = [d for d in dtypes if d not in ("f16", "bf16")]
    if unknown:
        parser.error(f"unknown dtype {unknown[0]!r} (f16, bf16)")
    bad = [d for d in args.head_dims if d not in ops.HEAD_DIMS]
    if bad:
        parser.error(f"head dim {bad[0]} is not supported ({', '.join(map(str, ops.HEAD_DIMS))})")
    paths = precompile_ops(args.out, args.target, args.head_dims, dtypes, args.mta, args.jobs,
                           log=print if args.verbose else None)
    size = sum(os.path.getsize(p) for p in set(paths))
    print(f"{len(set(paths))} bundles for {args.target} in {args.out} ({size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
