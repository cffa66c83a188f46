"""What the ops share: where their kernels run and with which tiles (Backend, BLOCKS, GPU_TUNED),
the argument checks, and the lazily made torch.autograd.Functions."""

import functools
import math
import os
import sys

import numpy as np

from .. import gpu as _gpu
from ..autotune import autotune
from ..compiler import cdiv, jit
from . import tuning

KERNELS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")

# Head dims the kernels are tested with (constexpr D; each value is one more compilation).
HEAD_DIMS = (16, 32, 64, 128)

# (BLOCK_M, BLOCK_N) per kernel. On the interpreter small tiles keep masked-off work low at small
# sizes; on the GPU GPU_TUNED refines them. lean_attention's BLOCK_M is None: it is picked per
# call from the rows of a GQA group (lean_block_m), and on the GPU its tiles from that
# (lean_tiles).
BLOCKS = {
    "interpreter": {"attention_fwd": (32, 32), "attention_bwd": (32, 32),
                    "lean_attention": (None, 32), "mta_fwd": (16, 16),
                    "mta_fwd_conv_keys": (16, 16),
                    "mta_bwd": (16, 16), "attention_kl_fwd": (32, 32),
                    "attention_kl_fwd_long": (32, 32), "attention_kl_bwd": (32, 32)},
    "gpu": {"attention_fwd": (64, 32), "attention_bwd": (32, 32),
            "mta_fwd": (32, 32), "mta_fwd_conv_keys": (32, 32), "mta_bwd": (16, 32),
            "attention_kl_fwd": (32, 32), "attention_kl_fwd_long": (32, 32),
            "attention_kl_bwd": (32, 32)},
}
# On the GPU, per (kernel, head dim): tiles, warps and pipeline depths measured fastest on an H100
# (scripts/gpu/tune.py; they override BLOCKS). lean_attention's depend on its query tile instead
# (lean_tiles).
GPU_TUNED = {
    ("attention_fwd", 16): dict(BLOCK_M=128, BLOCK_N=64, NUM_WARPS=4, NUM_STAGES=3),
    ("attention_fwd", 32): dict(BLOCK_M=128, BLOCK_N=64, NUM_WARPS=4, NUM_STAGES=3),
    ("attention_fwd", 64): dict(BLOCK_M=128, BLOCK_N=64, NUM_WARPS=4, NUM_STAGES=3),
    ("attention_fwd", 128): dict(BLOCK_M=128, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=2),
    ("attention_bwd", 64): dict(BLOCK_M=32, BLOCK_N=64, NUM_WARPS=4, NUM_STAGES=3),
    ("attention_bwd", 128): dict(BLOCK_M=64, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=3),
    ("attention_kl_fwd", 128): dict(BLOCK_M=64, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=2),
    ("attention_kl_bwd", 128): dict(BLOCK_M=64, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=2),
    ("mta_fwd", 64): dict(BLOCK_M=64, BLOCK_N=64, NUM_WARPS=8, NUM_STAGES=3),
    ("mta_bwd", 64): dict(BLOCK_M=32, BLOCK_N=32, NUM_WARPS=8, NUM_STAGES=3),
}
# On Hopper (target sm_90a) the dots whose BLOCK_M is a multiple of 16 · NUM_WARPS run on the
# warpgroup MMA (wgmma); these entries override GPU_TUNED there (scripts/gpu/tune.py on an H100;
# the D64 forward re-measured on an H200 after the softmax's instruction count dropped: two
# warpgroups of 64 rows beat one of 128 by 3 %; the backward kernels re-measured on an H100
# once dQ's dSᵀ went to the tensor cores from shared memory and two CTAs fit an SM; the D128
# forward warp-specialised with ping-pong: 555-574 TFLOP/s against 468-508 unspecialised, H100).
GPU_TUNED_SM90A = {
    # D64: four consumer warpgroups of 64 rows taking turns on the tensor cores, a producer
    # warpgroup, programs taking query blocks in turn (H200, B1 H32 bf16, op time with L2
    # flushed, against SDPA cuDNN in the same process: N 4k / 8k / 16k 296.1 / 1122.6 / 4551.3
    # us, 0.99 / 1.01 / 0.99x; causal 4k / 8k 178.8 / 618.4, 1.03 / 1.02x; the four without
    # turns and a program per block 315.2 / 1183.8 / 4570.6, causal two unspecialised
    # warpgroups 187.2 / 651.8).
    ("attention_fwd", 64): dict(BLOCK_M=256, BLOCK_N=64, NUM_WARPS=16, NUM_STAGES=3,
                                WARP_SPECIALIZE=True, PING_PONG=True, BLOCKS_IN_TURN=True),
    # Its programs take several query blocks each where that fills the SMs at once
    # (flash._query_programs): one CTA per SM (12 warps of 168 registers).
    ("attention_fwd", 128): dict(BLOCK_M=128, BLOCK_N=128, NUM_WARPS=8, NUM_STAGES=2,
                                 WARP_SPECIALIZE=True, PING_PONG=True, BLOCKS_IN_TURN=True),
    # The backward: 128 keys per program on two warpgroups (dQ = dS·K split
    # along D between them), half the dQ reductions of 64 keys. At D64 a
    # producer warpgroup issues the Q and dO copies (H200, B1 H32 N4096:
    # 1030 against 1177 us once ptxas honoured its setmaxnreg), and the query
    # blocks that see every key go through a loop without masks (936-937
    # against 1000 us). At D128 (255 registers) that loop spills: 1713-1726
    # against 1491-1493 us.
    ("attention_bwd", 64): dict(BLOCK_M=64, BLOCK_N=128, NUM_WARPS=8, NUM_STAGES=3,
                                WARP_SPECIALIZE=True, UNMASKED_LOOP=True),
    ("attention_bwd", 128): dict(BLOCK_M=64, BLOCK_N=128, NUM_WARPS=8, NUM_STAGES=2),
    # Key blocks of 128 once the full blocks went without masks (H200, B1 H16 D128 bf16, op
    # time: N 4096-16384 7-9 % under 128 x 64, causal or not; within 2.6 us of 64 x 64 at 1-2k);
    # a producer warpgroup, the two consumer warpgroups taking turns (H200, op time, L2 flushed:
    # causal N 2k / 8k 58.2 / 647.8 against 63.7 / 737.5 us, N 4k 327.8 against 376.9). Query
    # blocks in turn lost (masked query loads: 677.8 against 644.4 us at 8k; copied ahead, the
    # two query blocks' next ones do not fit beside two stages of keys).
    ("attention_kl_fwd", 128): dict(BLOCK_M=128, BLOCK_N=128, NUM_WARPS=8, NUM_STAGES=2,
                                    WARP_SPECIALIZE=True, PING_PONG=True),
    # Grids of many query blocks (kl.forward_table): four consumer warpgroups of 64 rows with
    # key blocks of 64, not in turns (H200, B1 H16 D128 bf16, op time, L2 flushed, one process
    # per form: causal N 8k / 16k 606.1 / 2224.2 against 675.6 / 2395.1 us, N 8k 1114.0 against
    # 1204.7, N 4k 299.3 against 319.1, causal 4k 177.9 against 181.2; in turns 616.0 / 2285.2,
    # 1153.4, 297.7, 178.1; causal 2k, 128 programs for 132 SMs: 90.8 against 57.6).
    ("attention_kl_fwd_long", 128): dict(BLOCK_M=256, BLOCK_N=64, NUM_WARPS=16, NUM_STAGES=2,
                                         WARP_SPECIALIZE=True),
    # A producer warpgroup copies the teacher's and the student's query blocks (H200, B1 H16
    # N 8192 D128 causal: 2274 / 2285 against 2302 / 2303 us), and the query blocks that see
    # every key take a loop without masks (2116 / 2118 against 2261 / 2258 us).
    ("attention_kl_bwd", 128): dict(BLOCK_M=64, BLOCK_N=128, NUM_WARPS=8, NUM_STAGES=2,
                                    WARP_SPECIALIZE=True, UNMASKED_LOOP=True),
    ("mta_fwd", 64): dict(BLOCK_M=64, BLOCK_N=32, NUM_WARPS=4, NUM_STAGES=3),
    # mta_fwd with the convolved keys (ops/mta.py conv_keys): two warpgroups share each block
    # of them, a producer warpgroup copies them, the two take turns on the tensor cores (H200,
    # N 4096: 646 us; 742 unspecialised, 1000 at 64 x 32 on one warpgroup, 1226 without them).
    ("mta_fwd_conv_keys", 64): dict(BLOCK_M=128, BLOCK_N=32, NUM_WARPS=8, NUM_STAGES=2,
                                    WARP_SPECIALIZE=True, PING_PONG=True),
    # Its halo rows of Q and dO copied ahead (tessel-pipeline reads them back): 4 warps now
    # beat 8 (H200, forward + backward at N 2048: 5.38 against 5.83 ms).
    ("mta_bwd", 64): dict(BLOCK_M=32, BLOCK_N=32, NUM_WARPS=4, NUM_STAGES=3),
}
# The multiprocessors the interpreter stands for (Backend.multiprocessor_count).
INTERPRETER_SMS = 2
# Rows per program of the Delta = rowsum(dO ∘ O) kernels.
PREPROCESS_ROWS = 64
# Elements per program of the conversion of the backwards' f32 dQ (Backend.scaled_cast).
CAST_BLOCK = 4096

_jit_kernels = {}
_tuners = {}


def _capturing():
    """Whether PyTorch is capturing a CUDA graph on the current stream."""
    torch = torch_module()
    return torch is not None and torch.cuda.is_current_stream_capturing()


def torch_module():
    return sys.modules.get("torch")


def is_torch(x):
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


def head_dim(constants):
    """The head dim GPU_TUNED is keyed by: D, or the larger of StreamKL's two."""
    return constants["D"] if "D" in constants else max(constants["DT"], constants["DS"])


def gpu_tiles(kernel, d, target=None):
    """The GPU's tile constexprs of `kernel` for head dim `d` when compiled for `target` (default:
    this machine's GPU; see GPU_TUNED and GPU_TUNED_SM90A)."""
    tiles = dict(zip(("BLOCK_M", "BLOCK_N"), BLOCKS["gpu"][kernel]))
    tiles.update(GPU_TUNED.get((kernel, d), {}))
    if (target or _gpu.target()) == "sm_90a":
        tiles.update(GPU_TUNED_SM90A.get((kernel, d), {}))
    return tiles


class Backend:
    """Where an op's kernels run and how its buffers are made: NumPy arrays on the interpreter,
    or PyTorch CUDA tensors on the GPU."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.name = "gpu" if gpu else "interpreter"

    def multiprocessor_count(self):
        """The GPU's SMs; on the interpreter INTERPRETER_SMS, so that schedules which depend on
        it (attention's causal block orders) run there with several programs per SM."""
        return _gpu.runtime().multiprocessor_count if self.gpu else INTERPRETER_SMS

    def kernel(self, tsl, name, stream_k="persistent"):
        """The JITKernel `name` of kernels/`tsl` on this back end, made once per process."""
        key = (tsl, name, self.gpu, stream_k)
        if key not in _jit_kernels:
            _jit_kernels[key] = jit(os.path.join(KERNELS_DIR, tsl), kernel=name,
                                    interpret=not self.gpu, stream_k=stream_k)
        return _jit_kernels[key]

    def launch(self, tsl, name, d, grid, args, constants, key, restore=(), table=None):
        """Launches kernel `name` of kernels/`tsl` with `args` and `constants` and its tiles for
        head dim `d` over grid(tiles) (a function of the tile constexprs). The tiles are the
        table's (tiles()) under `table` (default `name`: a kernel launched in two forms keeps
        an entry per form); with op tuning on (tuning.tune_ops()) and candidates for the entry,
        the fastest of the table's entry and the candidates for the call's `key` (argument
        names, see tessel.autotune), `restore` naming the arguments a trial changes that later
        ones must find as they were (accumulated outputs)."""
        table = table or name
        # Tuning synchronises the device, which a CUDA graph being captured forbids: the
        # table's tiles there.
        tune = tuning.tune_ops() and not (self.gpu and _capturing())
        tuner = self._tuner(tsl, name, table, d, key, restore) if tune else None
        if tuner is None:
            tiles = self.tiles(table, d)
            self.kernel(tsl, name)[grid(tiles)](*args, **constants, **tiles)
        else:
            tuner[grid](*args, **constants)

    def _tuner(self, tsl, name, table, d, key, restore):
        """The Autotuner of kernel `name` with the tiles of entry `table` at head dim `d` (made
        once), or None: no candidates."""
        tuner_key = (tsl, name, table, d, self.gpu)
        if tuner_key not in _tuners:
            tiles = self.tiles(table, d)
            candidates = [c for c in tuning.candidates(table, d) if c != tiles]
            _tuners[tuner_key] = autotune(
                self.kernel(tsl, name), configs=[tiles] + candidates, key=key,
                restore=restore, budget_s=tuning.TUNE_BUDGET_S,
                margin=tuning.TUNE_MARGIN) if candidates else None
        return _tuners[tuner_key]

    def blocks(self, kernel):
        return BLOCKS[self.name][kernel]

    def tiles(self, kernel, d):
        """The tile constexprs of `kernel` for head dim `d`: BLOCK_M, BLOCK_N and, where tuned,
        NUM_WARPS and NUM_STAGES."""
        return gpu_tiles(kernel, d) if self.gpu else dict(zip(("BLOCK_M", "BLOCK_N"),
                                                              self.blocks(kernel)))

    def input(self, x):
        """The array as the kernels take it: contiguous along D (and C-contiguous for NumPy).
        On the GPU also what the kernels' multiple_of hints promise, so that their loads are
        16-byte vectors: the start 16-byte aligned and the batch, head and row strides
        multiples of 8 elements; other tensors are copied."""
        if not self.gpu:
            return np.ascontiguousarray(x)
        if x.stride(-1) == 1 and x.data_ptr() % 16 == 0 and \
                all(s % 8 == 0 for s in x.stride()[:-1]):
            return x
        return x.clone(memory_format=torch_module().contiguous_format)

    @staticmethod
    def strides(x):
        """Element strides (batch, head, row) of a (B, H, N, D) array with stride 1 along D."""
        if isinstance(x, np.ndarray):
            _, h, n, d = x.shape
            return h * n * d, n * d, d
        return tuple(x.stride()[:3])

    def empty(self, shape, like, dtype=None):
        """An output buffer (every element is written by the kernel); dtype None: like's."""
        if self.gpu:
            return _allocate("empty", shape, dtype or like.dtype, like.device)
        return np.zeros(shape, dtype or like.dtype)

    def zeros(self, shape, like, dtype):
        """A zeroed buffer (atomically accumulated gradients)."""
        if self.gpu:
            return _allocate("zeros", shape, dtype, like.device)
        return np.zeros(shape, dtype)

    def f32(self):
        return torch_module().float32 if self.gpu else np.float32

    def scaled_cast(self, x, scale, like, dtype):
        """x · scale (an f32 array, a Python float) in the dtype of `like` (the kernels' element
        type `dtype`): one pass over x (the backwards' f32 dQ, which their kernels leave
        unscaled), on the GPU by kernels/convert.tsl. x is an op's own contiguous buffer of
        (B, H, N, D) elements, D one of HEAD_DIMS: whole vectors of 8, as the kernel reads them."""
        if not self.gpu:
            return (x * np.float32(scale)).astype(like.dtype)
        y = self.empty(x.shape, like)
        n = x.numel()
        if n:
            self.kernel("convert.tsl", "scaled_cast")[(cdiv(n, CAST_BLOCK),)](
                x, y, n, scale, BLOCK=CAST_BLOCK, DTYPE=dtype)
        return y


def _allocate(kind, shape, dtype, device):
    """torch.empty or torch.zeros (`kind`) of shape, dtype and device, reported to the recorder
    of an op's plan (ops.plans). A plan allocates through new_empty/new_zeros of an empty tensor
    of the dtype and device: they parse no dtype or device (a plan's call ~0.6 us faster)."""
    tensor = getattr(torch_module(), kind)(shape, dtype=dtype, device=device)
    rec = _gpu.recorder()
    if rec is not None:
        rec.allocated(tensor, functools.partial(getattr(tensor.new_empty(0), "new_" + kind), shape))
    return tensor


# ---------------------------------------------------------------------------------------------
# argument checks

def bhnd(op, name, x):
    if not isinstance(x, np.ndarray) and not is_torch(x):
        raise TypeError(f"tessel.{op}: {name} must be a NumPy array or a torch tensor "
                        f"(B, H, N, D), got {type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(f"tessel.{op}: {name} must have 4 dimensions (B, H, N, D), got shape "
                         f"{tuple(x.shape)}")
    return tuple(x.shape)


def backend(op, arrays):
    """The Backend of the inputs ({name: array}), which must all be NumPy arrays or all CUDA
    tensors on one device."""
    torch_names = [n for n, a in arrays.items() if is_torch(a)]
    if not torch_names:
        return Backend(gpu=False)
    if len(torch_names) != len(arrays):
        other = next(n for n in arrays if n not in torch_names)
        raise TypeError(f"tessel.{op}: {torch_names[0]} is a torch tensor but {other} is not; "
                        f"pass all inputs as CUDA tensors (or all as NumPy arrays)")
    devices = {n: arrays[n].device for n in torch_names}
    for n, device in devices.items():
        if device.type != "cuda":
            raise TypeError(f"tessel.{op}: {n} is on {device}; tessel runs torch tensors on a "
                            f"CUDA device (NumPy arrays run on the CPU interpreter)")
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{n} {d}" for n, d in devices.items())
        raise ValueError(f"tessel.{op}: the inputs must be on one device, got {listed}")
    return Backend(gpu=True)


def element_type(op, arrays):
    """'f16' or 'bf16' from the one dtype of `arrays` ({name: array})."""
    dtypes = {name: a.dtype for name, a in arrays.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{name} {dt}" for name, dt in dtypes.items())
        raise TypeError(f"tessel.{op}: the inputs must share one dtype, got {listed}")
    dtype = next(iter(dtypes.values()))
    torch = torch_module()
    if torch is not None and isinstance(dtype, torch.dtype):
        names, supported = {torch.float16: "f16", torch.bfloat16: "bf16"}, \
            "torch tensors: float16 or bfloat16"
    else:
        names, supported = {np.dtype(np.float16): "f16", np.dtype(np.float32): "bf16"}, \
            "float16 runs in f16, float32 in bf16"
    if dtype not in names:
        raise TypeError(f"tessel.{op}: unsupported dtype {dtype} ({supported})")
    return names[dtype]


def check_head_dim(op, name, d):
    if d not in HEAD_DIMS:
        raise ValueError(f"tessel.{op}: head dim {d} of {name} is not supported "
                         f"(supported: {', '.join(map(str, HEAD_DIMS))})")


def check_gqa(op, q_name, h, kv_name, hkv):
    if hkv < 1 or h % hkv:
        raise ValueError(f"tessel.{op}: the {h} heads of {q_name} must be a multiple of the "
                         f"{hkv} heads of {kv_name} (GQA)")


def check_same(op, what, **values):
    if len(set(values.values())) > 1:
        listed = ", ".join(f"{name} {v}" for name, v in values.items())
        raise ValueError(f"tessel.{op}: {what} must match, got {listed}")


def scale_value(op, scale, d, name="scale"):
    if scale is None:
        return 1.0 / math.sqrt(d)
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.integer,
                                                                     np.floating)):
        raise TypeError(f"tessel.{op}: {name} must be a real number, got {type(scale).__name__}")
    if not math.isfinite(scale):
        raise ValueError(f"tessel.{op}: {name} must be finite, got {scale}")
    return float(scale)


def attention_args(op, q, k, v):
    """Checks q (B, H, Nq, D) and k, v (B, HKV, Nk, D); returns (B, H, HKV, Nq, Nk, D)."""
    B, H, Nq, D = bhnd(op, "q", q)
    Bk, HKV, Nk, Dk = bhnd(op, "k", k)
    check_same(op, "the shapes of k and v", k=(Bk, HKV, Nk, Dk), v=bhnd(op, "v", v))
    check_same(op, "batch sizes", q=B, k=Bk)
    check_same(op, "head dims", q=D, k=Dk)
    check_head_dim(op, "q", D)
    check_gqa(op, "q", H, "k", HKV)
    return B, H, HKV, Nq, Nk, D


def needs_autograd(inputs):
    """Whether a torch op must record its graph (grad mode on and an input requiring grad)."""
    torch = torch_module()
    return torch is not None and torch.is_grad_enabled() and any(
        is_torch(x) and x.requires_grad for x in inputs)


# ---------------------------------------------------------------------------------------------
# kernels shared by the backward passes

def statistics_rows(nq):
    """The row length of the per-query f32 statistics (LSE, Delta) the backwards take: Nq rounded
    up to 4, 16 bytes, so that on Hopper the copy engine can move a query block's part."""
    return cdiv(nq, 4) * 4


def delta(be, tsl, kernel, o, do, dtype):
    """Delta = rowsum(dO ∘ O) (B, H, N) f32 by the file's preprocess kernel; o contiguous."""
    B, H, N, D = o.shape
    out = be.empty((B, H, N), o, be.f32())
    be.kernel(tsl, kernel)[(cdiv(N, PREPROCESS_ROWS), B * H)](
        o, do, out, *be.strides(do), H, N, D=D, BLOCK_M=PREPROCESS_ROWS, DTYPE=dtype)
    return out


# ---------------------------------------------------------------------------------------------
# autograd (PyTorch); the classes are made on first use so that importing tessel needs no torch

_autograd_functions = {}


def autograd_function(name, define):
    """The torch.autograd.Function `name`, made once by define(torch, gpu_backend)."""
    if name not in _autograd_functions:
        _autograd_functions[name] = define(torch_module(), Backend(gpu=True))
    return _autograd_functions[name]
