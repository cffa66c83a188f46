"""The launch fast path without a GPU: the real runtime on the stand-in driver
(libTesselFakeCuda.so, which records each launch's function, grid, block, stream and argument
bytes) and PyTorch replaced by test/python/fake_torch.py. Each fast path must launch exactly what
the checked path launches (same argument bytes, grid and stream), decline to the checked path
for anything it does not take (whose errors name the kernel), and report driver failures naming
the kernel:
  * kernel[grid](...) and persistent kernel(...) through Runtime.try_launch;
  * Runtime.prepare / PreparedLaunch;
  * the ready ops' plans (tessel.ops.plans), replayed from their first call."""

import ctypes
import os
import sys

import numpy as np
import pytest

import fake_torch
import tessel
from kernels_for_tests import ADD, HINTED, OPTIONAL_SUMS
from tessel import gpu
from tessel._backend import _tessel
from tessel.ops import common, flash, kl, lean, plans

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(tessel.__file__))))
FAKE_DRIVER = os.path.join(BUILD_DIR, "bin", "libTesselFakeCuda.so")
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
VECTOR_ADD = os.path.join(ROOT, "test", "Unit", "Runtime", "Inputs", "vector_add.bundle")
# attention_fwd(q, k, o, Nk, HKV, H, skn, skh, skb) with tensor maps of k and q (bundle version 4).
TENSOR_MAPS = os.path.join(ROOT, "test", "Unit", "Runtime", "Inputs", "tensor_maps.bundle")

class Driver:
    """The stand-in driver's record of launches, through ctypes."""

    def __init__(self):
        self.lib = ctypes.CDLL(FAKE_DRIVER)
        self.lib.fakeCudaDescribeLaunch.restype = ctypes.c_char_p
        self.lib.fakeCudaFail.argtypes = (ctypes.c_char_p, ctypes.c_int)

    def tensor_map_encodes(self):
        return self.lib.fakeCudaTensorMapEncodeCount()

    def reset(self):
        self.lib.fakeCudaReset()

    def launches(self):
        return [self.lib.fakeCudaDescribeLaunch(i).decode()
                for i in range(self.lib.fakeCudaLaunchCount())]

    def fail(self, call, result=700):
        self.lib.fakeCudaFail(call.encode(), result)


@pytest.fixture
def driver():
    d = Driver()
    d.reset()
    yield d
    d.reset()


@pytest.fixture
def rt(monkeypatch, driver):
    """The process's runtime is one on the stand-in driver (a compute capability 9.0 device)."""
    runtime = _tessel.Runtime(driver_library=FAKE_DRIVER)
    monkeypatch.setattr(gpu, "runtime", lambda: runtime)
    return runtime


@pytest.fixture
def torch(monkeypatch, rt):
    """fake_torch as `torch`, with the ops' kernels and plans made afresh for this runtime."""
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setattr(gpu, "_torch_state", None)
    monkeypatch.setattr(common, "_jit_kernels", {})
    for module in (flash, lean, kl):
        monkeypatch.setattr(module, "_PLANS", plans.Plans())
    fake_torch.allocator.reset()
    fake_torch.cuda.stream = 0
    yield fake_torch
    _tessel.set_tensor_adapter(None)


def _slow_path_only(monkeypatch):
    monkeypatch.setattr(gpu, "try_launch", lambda *args: False)


def _forbid_slow_path(monkeypatch):
    def fail(*args):
        raise AssertionError("the checked path ran")
    monkeypatch.setattr(gpu, "launch", fail)


# ---------------------------------------------------------------------------------------------
# Runtime.prepare / PreparedLaunch

def test_prepared_launch_packs_what_launch_packs(rt, driver):
    k = rt.load_bundle(VECTOR_ADD).kernel("vector_add")
    rt.launch(k, [0x1000, 0x2000, 0x3000, 130], stream=0x77)
    prepared = rt.prepare(k, [0, 0, 0, 130])
    assert prepared.kernel_name == "vector_add" and prepared.pointer_params == [0, 1, 2]
    assert prepared.grid == [1, 1, 1]                  # cdiv(130, 256)
    assert prepared.launch_on(0x77, 0x1000, 0x2000, 0x3000) is True
    first, again = driver.launches()
    assert first == again
    assert first == ("vector_add grid=1,1,1 block=256,1,1 shared=0 stream=0x77 args="
                     "0010000000000000,0020000000000000,0030000000000000,82000000")
    with pytest.raises(ValueError, match="kernel 'vector_add': the prepared launch takes 3 "
                                         "buffers, got 2"):
        prepared.launch_on(0, 1, 2)
    with pytest.raises(TypeError, match="kernel 'vector_add', argument 'y': expected a device "
                                        "address or an object with data_ptr"):
        prepared.launch_on(0, 1, "y", 3)


def test_prepared_launch_checks_pointer_hints(rt, driver):
    bundle = _tessel.compile_bundle(HINTED, "hinted.tsl", "hinted", {}, "sm_90a")
    k = rt.load_bundle_from_string(bundle, "hinted.bundle").kernel("hinted")
    with pytest.raises(tessel.LaunchError, match=r"kernel 'hinted': argument 'n' = 12 is not a "
                                                 r"multiple of 8"):
        rt.prepare(k, [0, 0, 12, 4], grid=[2])
    prepared = rt.prepare(k, [0, 0, 8, 4], grid=[2])
    assert prepared.grid == [2, 1, 1]
    assert prepared.launch_on(0, 0x1008, 0x1004) is False      # x: multiple_of 16
    assert driver.launches() == []
    assert prepared.launch_on(0, 0x1010, 0x1004) is True
    assert len(driver.launches()) == 1


def test_prepared_launch_errors_name_the_kernel(rt, driver):
    prepared = rt.prepare(rt.load_bundle(VECTOR_ADD).kernel("vector_add"), [0, 0, 0, 4])
    driver.fail("cuLaunchKernel")
    with pytest.raises(tessel.LaunchError, match=r"kernel 'vector_add': cuLaunchKernel failed: "
                                                 r"CUDA_ERROR_ILLEGAL_ADDRESS"):
        prepared.launch_on(0, 16, 32, 48)


def _fake_tensor_map(serial, address):
    """The hex of the CUtensorMap the stand-in driver encodes: its call number, then the address."""
    return serial.to_bytes(8, "little").hex() + address.to_bytes(8, "little").hex() + "00" * 112


def test_tensor_maps_on_every_launch_path(rt, driver):
    k = rt.load_bundle(TENSOR_MAPS).kernel("attention_fwd")
    q, kv, o = 0x10000, 0x20000, 0x30000
    scalars = [256, 2, 4, 64, 16384, 32768]           # Nk, HKV, H, skn, skh, skb
    rt.launch(k, [q, kv, o, *scalars], grid=[2, 8])
    assert rt.try_launch(k, (q, kv, o, *scalars), (2, 8)) is True
    prepared = rt.prepare(k, [0, 0, 0, *scalars], grid=[2, 8])
    assert prepared.launch_on(0, q, kv, o) is True
    launches = driver.launches()
    assert len(launches) == 3 and len(set(launches)) == 1, launches
    # The arguments, then the maps of k and q; encoded once, by the first launch.
    def maps(launch):
        args = launch.split(" args=")[1].split(",")
        assert len(args) == 11
        return args[9:]
    assert maps(launches[0]) == [_fake_tensor_map(1, kv), _fake_tensor_map(2, q)]
    assert driver.tensor_map_encodes() == 2
    # A new buffer: its map is encoded, the other one reused.
    assert prepared.launch_on(0, q, kv + 0x100, o) is True
    assert maps(driver.launches()[-1]) == [_fake_tensor_map(3, kv + 0x100),
                                           _fake_tensor_map(2, q)]


def test_tensor_map_errors_name_the_kernel(rt, driver):
    k = rt.load_bundle(TENSOR_MAPS).kernel("attention_fwd")
    scalars = [256, 2, 4, 64, 16384, 32768]
    misaligned = (r"kernel 'attention_fwd': argument 'k' = 0x20008 is not 16-byte aligned \(its "
                  r"tensor map needs it\)")
    with pytest.raises(tessel.LaunchError, match=misaligned):
        rt.launch(k, [0x10000, 0x20008, 0x30000, *scalars], grid=[2, 8])
    with pytest.raises(tessel.LaunchError, match=misaligned):
        rt.try_launch(k, (0x10000, 0x20008, 0x30000, *scalars), (2, 8))
    prepared = rt.prepare(k, [0, 0, 0, *scalars], grid=[2, 8])
    assert prepared.launch_on(0, 0x10000, 0x20008, 0x30000) is False
    with pytest.raises(tessel.LaunchError, match=r"kernel 'attention_fwd': tensor map of 'k': "
                                                 r"stride 'skn' = 4 elements \(8 bytes\) is "
                                                 r"not a multiple of 16 bytes"):
        rt.prepare(k, [0, 0, 0, 256, 2, 4, 4, 16384, 32768], grid=[2, 8])
    driver.fail("cuTensorMapEncodeTiled")
    with pytest.raises(tessel.LaunchError, match=r"kernel 'attention_fwd': tensor map of 'k': "
                                                 r"cuTensorMapEncodeTiled failed"):
        prepared.launch_on(0, 0x10000, 0x20000, 0x30000)
    assert driver.launches() == []


# ---------------------------------------------------------------------------------------------
# kernel[grid](...) through Runtime.try_launch

def _add_inputs(torch, n=130):
    dev = torch.device("cuda", 0)
    return [torch.Tensor((n,), torch.float32, dev) for _ in range(3)]


def test_kernel_grid_fast_path_launches_what_the_checked_path_does(torch, driver, monkeypatch):
    kernel = tessel.compile(ADD, {"BLOCK": 64}, interpret=False)
    x, y, out = _add_inputs(torch)
    torch.cuda.stream = 0x5150
    kernel[(3,)](x, y, out, 130)           # the first call meets torch: registers it
    add = tessel.jit(ADD)
    add[3](x, y, out, 130, BLOCK=64)       # the first call binds the arguments by name
    driver.reset()
    with monkeypatch.context() as mp:
        _forbid_slow_path(mp)
        kernel[(3,)](x, y, out, 130)
        kernel[lambda meta: (tessel.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, 130)
        add[3](x, y, out, 130, BLOCK=64)
    with monkeypatch.context() as mp:
        _slow_path_only(mp)
        kernel[(3,)](x, y, out, 130)
    launches = driver.launches()
    assert len(launches) == 4 and len(set(launches)) == 1, launches
    assert launches[0].startswith("add grid=3,1,1 block=128,1,1 shared=0 stream=0x5150 args=")
    # Addresses only (no tensor): the legacy default stream, as on the checked path.
    driver.reset()
    kernel[(1,)](0x1000, 0x2000, 0x3000, 1)
    assert " stream=(nil) " in driver.launches()[0] or " stream=0x0 " in driver.launches()[0]


def test_none_pointer_launches(torch, driver, monkeypatch):
    """A pointer compiled as None takes None on every path (the fast one, the checked one, a
    prepared launch) as a null pointer, and only None."""
    double = tessel.jit(OPTIONAL_SUMS)
    x, y, _ = _add_inputs(torch)
    double[3](x, y, None, 130)                 # compiles and registers torch
    driver.reset()
    with monkeypatch.context() as mp:
        _forbid_slow_path(mp)
        double[3](x, y, None, 130)
    with monkeypatch.context() as mp:
        _slow_path_only(mp)
        double[3](x, y, None, 130)
    kernel = double._specializations[(("sums", "None"),)]
    prepared = gpu.runtime().prepare(kernel._rt_kernel, [0, 0, None, 130], [3])
    assert prepared.pointer_params == [0, 1]
    assert prepared(x, y)
    launches = driver.launches()
    assert len(launches) == 3 and len(set(launches)) == 1, launches
    args = launches[0].split(" args=")[1].split(",")
    assert args[2] == "0000000000000000" and args[0] != args[2]
    with pytest.raises(TypeError, match=r"kernel 'double', argument 'sums': the kernel was "
                                        r"compiled with it None; pass None"):
        kernel[(3,)](x, y, y, 130)
    with pytest.raises(TypeError, match=r"kernel 'double', argument 'sums': None where the "
                                        r"kernel uses the buffer"):
        tessel.compile(OPTIONAL_SUMS, interpret=False)[(3,)](x, y, None, 130)
    assert len(driver.launches()) == 3


def test_kernel_grid_fast_path_declines_what_it_does_not_take(torch, driver):
    """Each of these goes to the checked path, whose error names the kernel and the argument."""
    kernel = tessel.compile(ADD, {"BLOCK": 64}, interpret=False)
    x, y, out = _add_inputs(torch)
    half = torch.Tensor((130,), torch.float16, torch.device("cuda", 0))
    cpu = torch.Tensor((130,), torch.float32, torch.device("cpu"))
    other = torch.Tensor((130,), torch.float32, torch.device("cuda", 1))
    errors = [
        ((half, y, out, 130), TypeError,
         r"kernel 'add', argument 'x': expected a buffer of f32, got f16 \(torch torch.float16\)"),
        ((x, cpu, out, 130), TypeError, r"kernel 'add', argument 'y': a CPU tensor"),
        ((x, y, other, 130), ValueError, r"kernel 'add', argument 'out': the tensor is on "
                                         r"device\(type='cuda', index=1\); tessel launches on "
                                         r"cuda:0"),
        ((x, y, out, 2 ** 31), ValueError, r"kernel 'add', argument 'n': 2147483648 does not "
                                           r"fit in i32"),
        ((x, y, out, True), TypeError, r"kernel 'add', argument 'n': i32 takes an integer, got "
                                       r"bool"),
        ((x, y, out, 1.5), TypeError, r"kernel 'add', argument 'n': i32 takes an integer"),
        ((x, y, -16, 1), ValueError, r"argument 'out': a device address must not be negative"),
    ]
    for args, error, message in errors:
        with pytest.raises(error, match=message):
            kernel[(1,)](*args)
    with pytest.raises(TypeError, match=r"kernel 'add': too many positional arguments"):
        kernel[(1,)](x, y, out, 130, 1)
    with pytest.raises(ValueError, match=r"kernel 'add': the grid must be 1 to 3 non-negative"):
        kernel[(1, 1, 1, 1)](x, y, out, 130)
    assert driver.launches() == []


def test_kernel_grid_fast_path_keeps_multiple_of_hints(torch, driver):
    kernel = tessel.compile(HINTED, interpret=False)
    dev = torch.device("cuda", 0)
    x, out = (torch.Tensor((64,), torch.float32, dev) for _ in range(2))
    with pytest.raises(ValueError, match=r"kernel 'hinted': argument 'x' = 0x[0-9a-f]+ is not "
                                         r"16-byte aligned \(multiple_of in the kernel source\)"):
        kernel[(1,)](x.view_at(4), out, 8, 4)
    with pytest.raises(ValueError, match=r"kernel 'hinted': argument 'stride' = 6 is not a "
                                         r"multiple of 4"):
        kernel[(1,)](x, out, 8, 6)
    assert driver.launches() == []
    kernel[(1,)](x, out, 8, 4)
    assert len(driver.launches()) == 1


def test_kernel_grid_launch_errors_name_the_kernel(torch, driver):
    kernel = tessel.compile(ADD, {"BLOCK": 64}, interpret=False)
    x, y, out = _add_inputs(torch)
    kernel[(1,)](x, y, out, 1)
    driver.fail("cuLaunchKernel")
    with pytest.raises(tessel.LaunchError, match=r"kernel 'add': cuLaunchKernel failed: "
                                                 r"CUDA_ERROR_ILLEGAL_ADDRESS"):
        kernel[(1,)](x, y, out, 1)


def test_persistent_kernel_fast_path(torch, driver, monkeypatch):
    lean_kernel = tessel.compile(os.path.join(tessel.KERNELS_DIR, "lean_attention.tsl"),
                                 {"D": 16, "BLOCK_N": 32}, kernel="lean_attention",
                                 interpret=False)
    dev = torch.device("cuda", 0)
    bufs = [torch.Tensor((1, 2, 4, 16), torch.float16, dev) for _ in range(4)]
    lse = torch.Tensor((1, 2, 4), torch.float32, dev)
    args = [*bufs, lse, 128, 64, 16, 128, 64, 16, 128, 64, 16, 1, 2, 1, 4, 7, 0.25]
    lean_kernel(*args)
    driver.reset()
    with monkeypatch.context() as mp:
        _forbid_slow_path(mp)
        lean_kernel(*args)
    with monkeypatch.context() as mp:
        _slow_path_only(mp)
        lean_kernel(*args)
    fast, slow = driver.launches()
    assert fast == slow and fast.startswith("lean_attention grid=")


# ---------------------------------------------------------------------------------------------
# the ops' plans

def _bhnd(torch, *shape, dtype=None):
    return torch.Tensor(shape, dtype or torch.float16, torch.device("cuda", 0))


def _twice(torch, driver, monkeypatch, op, plan_cache, inputs, **kwargs):
    """(launches of the first, checked call; launches of the second, planned one), each call
    seeing the same output addresses."""
    torch.allocator.reset()
    first = op(*inputs, **kwargs)
    assert len(plan_cache) == 1
    recorded = driver.launches()
    driver.reset()
    torch.allocator.reset()
    with monkeypatch.context() as mp:
        _forbid_slow_path(mp)
        second = op(*inputs, **kwargs)
    assert first.shape == second.shape and first.data_ptr() == second.data_ptr()
    return recorded, driver.launches()


def test_attention_plan_replays_the_checked_launch(torch, driver, monkeypatch):
    q, k, v = _bhnd(torch, 1, 4, 24, 16), _bhnd(torch, 1, 2, 40, 16), _bhnd(torch, 1, 2, 40, 16)
    torch.cuda.stream = 0xABC
    recorded, planned = _twice(torch, driver, monkeypatch, tessel.attention, flash._PLANS,
                               (q, k, v), scale=0.5)
    assert recorded == planned and len(planned) == 1
    assert planned[0].startswith("attention_fwd grid=1,4,1 ") and " stream=0xabc " in planned[0]
    torch.cuda.stream = 0xDEF
    tessel.attention(q, k, v, scale=0.5)
    assert " stream=0xdef " in driver.launches()[-1]
    # Another key: another plan.
    tessel.attention(q, k, v, scale=0.25)
    assert len(flash._PLANS) == 2


def test_lean_attention_plan_replays_the_persistent_launch(torch, driver, monkeypatch):
    q = _bhnd(torch, 2, 8, 1, 16)
    k, v = _bhnd(torch, 2, 2, 300, 16), _bhnd(torch, 2, 2, 300, 16)
    for strategy in ("stream-k", "split-k"):
        driver.reset()
        monkeypatch.setattr(lean, "_PLANS", plans.Plans())
        recorded, planned = _twice(torch, driver, monkeypatch, tessel.lean_attention, lean._PLANS,
                                   (q, k, v), strategy=strategy)
        assert recorded == planned
        assert len(planned) == (2 if strategy == "split-k" else 1)   # split-K: + combine


def test_attention_kl_plan(torch, driver, monkeypatch):
    qt, kt = _bhnd(torch, 1, 2, 16, 16), _bhnd(torch, 1, 2, 16, 16)
    recorded, planned = _twice(torch, driver, monkeypatch, tessel.attention_kl, kl._PLANS,
                               (qt, kt, qt, kt), reduction="none")
    assert recorded == planned and planned[0].startswith("attention_kl_fwd ")


def test_plans_decline_misaligned_inputs_to_the_checked_path(torch, driver):
    """The checked path copies an input whose start the kernels' hints do not take; the plan made
    for aligned inputs declines it and the op takes that path."""
    q, k, v = _bhnd(torch, 1, 2, 8, 16), _bhnd(torch, 1, 2, 8, 16), _bhnd(torch, 1, 2, 8, 16)
    tessel.attention(q, k, v)
    assert len(flash._PLANS) == 1
    driver.reset()
    shifted = q.view_at(8)
    tessel.attention(shifted, k, v)
    (launch,) = driver.launches()
    q_arg = int.from_bytes(bytes.fromhex(launch.split("args=")[1].split(",")[0]), "little")
    assert q_arg % 16 == 0 and q_arg != shifted.data_ptr()          # a copy was launched
    assert len(flash._PLANS) == 1


def test_no_plan_where_the_op_copies_or_records_autograd(torch, driver):
    q, k, v = _bhnd(torch, 1, 2, 8, 16), _bhnd(torch, 1, 2, 8, 16), _bhnd(torch, 1, 2, 8, 16)
    strided = torch.Tensor((1, 2, 8, 16), torch.float16, torch.device("cuda", 0),
                           strides=(2 * 8 * 20, 8 * 20, 20, 1))   # rows of 20: not 8-aligned
    tessel.attention(strided, k, v)
    assert len(flash._PLANS) == 0
    assert plans.key((q, k, v)) is not None
    q.requires_grad = True
    assert plans.key((q, k, v)) is None
    assert plans.key((np.zeros((1, 1, 1, 16)),)) is None


def test_plan_keys(torch, monkeypatch):
    """A plan key tells apart what the kernels' scalars and grids depend on: each tensor's
    shape, strides, dtype and device, and the other arguments."""
    dev = torch.device("cuda", 0)
    x = torch.Tensor((2, 3, 8, 16), torch.float16, dev)
    same = torch.Tensor((2, 3, 8, 16), torch.float16, dev)          # other memory, same key
    others = [torch.Tensor((2, 3, 8, 32), torch.float16, dev),
              torch.Tensor((2, 3, 8, 16), torch.float16, dev, strides=(3 * 8 * 32, 8 * 32, 32, 1)),
              torch.Tensor((2, 3, 8, 16), torch.bfloat16, dev),
              torch.Tensor((2, 3, 8, 16), torch.float16, torch.device("cuda", 1)),
              torch.Tensor((2, 3, 128), torch.float16, dev)]
    keys = {plans.key((x,), True, 0.5)}
    assert plans.key((same,), True, 0.5) in keys
    keys |= {plans.key((y,), True, 0.5) for y in others}
    keys |= {plans.key((x,), False, 0.5), plans.key((x,), True, 0.25), plans.key((x, x), True, 0.5)}
    assert len(keys) == 1 + len(others) + 3 and None not in keys
    # Autograd only in grad mode.
    x.requires_grad = True
    assert plans.key((x,)) is None
    monkeypatch.setattr(torch, "grad_enabled", False)
    assert plans.key((x,)) is not None


def test_planned_op_launch_errors_name_the_kernel(torch, driver):
    q = _bhnd(torch, 1, 2, 8, 16)
    tessel.attention(q, q, q)
    driver.fail("cuLaunchKernel")
    with pytest.raises(tessel.LaunchError, match=r"kernel 'attention_fwd': cuLaunchKernel "
                                                 r"failed: CUDA_ERROR_ILLEGAL_ADDRESS"):
        tessel.attention(q, q, q)


def test_op_errors_still_raised_after_a_plan(torch, driver):
    q = _bhnd(torch, 1, 2, 8, 16)
    tessel.attention(q, q, q)
    tessel.attention(q, q, q, scale=1)
    with pytest.raises(TypeError, match=r"tessel.attention: scale must be a real number, got "
                                        r"bool"):
        tessel.attention(q, q, q, scale=True)          # == 1, but refused
    with pytest.raises(TypeError, match=r"tessel.attention: the inputs must share one dtype"):
        tessel.attention(q, q, _bhnd(torch, 1, 2, 8, 16, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"tessel.attention: head dim 48 of q is not supported"):
        tessel.attention(*(_bhnd(torch, 1, 2, 8, 48) for _ in range(3)))
