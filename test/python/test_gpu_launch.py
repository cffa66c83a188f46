"""The GPU half of the package without a GPU: bundles from tessel.precompile, the runtime-only
lookup of precompiled bundles (the compiler hidden), and GPU launches through a stand-in runtime
that records what the real one would be asked to do: device pointers from
__cuda_array_interface__, __dlpack__ and ints, scalar checks, streams, grids. The real launches
are tested on a machine with an NVIDIA GPU (test/gpu)."""

import json
import os

import numpy as np
import pytest

import tessel
from kernels_for_tests import ADD, HINTED, OPTIONAL_SUMS
from tessel import gpu
from tessel._backend import _tessel

LEAN = os.path.join(tessel.KERNELS_DIR, "lean_attention.tsl")


class FakeKernel:
    def __init__(self, info):
        self.name = info["name"]
        self.params = [(p["name"], p["kind"], p.get("elem", ""), p.get("multiple_of"),
                        p.get("none", False)) for p in info["params"]]
        self.num_warps = info["num_warps"]
        self.persistent = info["launch"]["kind"] == "persistent"
        self.cluster = info["launch"].get("cluster", 1)
        self.resident_clusters = None


class FakeModule:
    def __init__(self, text):
        self.kernels = {k["name"]: FakeKernel(k) for k in json.loads(text)["kernels"]}

    def kernel(self, name):
        return self.kernels[name]


class FakeRuntime:
    """Records launches as (kernel name, args, stream, grid)."""
    compute_capability = (9, 0)

    def __init__(self):
        self.launches, self.loaded = [], []

    def load_bundle_from_string(self, text, name):
        self.loaded.append(name)
        return FakeModule(text)

    def launch(self, kernel, args, stream, grid):
        self.launches.append((kernel.name, args, stream, grid))

    def try_launch(self, kernel, args, grid):
        """The fast path declines everything here: these tests are of the checked path (the fast
        one is tested against the real runtime in test_fast_launch.py)."""
        return False


class CudaArray:
    """A stand-in for a CuPy array: only __cuda_array_interface__."""

    def __init__(self, address, typestr="<f4", shape=(16,)):
        self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr,
                                         "shape": shape, "version": 3}


class DLPackOnly:
    """An object that only speaks DLPack (here a host array: device type 1)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()


@pytest.fixture
def fake_gpu(monkeypatch):
    runtime = FakeRuntime()
    monkeypatch.setattr(gpu, "runtime", lambda: runtime)
    return runtime


@pytest.fixture
def runtime_only(monkeypatch, tmp_path, fake_gpu):
    """A package without the compiler, with $TESSEL_BUNDLE_DIR at a fresh directory."""
    bundles = tmp_path / "bundles"
    monkeypatch.setenv("TESSEL_BUNDLE_DIR", str(bundles))
    monkeypatch.setattr(_tessel, "has_compiler", False)
    monkeypatch.setattr(_tessel, "compiler_error", "cannot open libtessel_compiler.so")
    return bundles


def _precompile(source, bundles, **constants):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_tessel, "has_compiler", True)
        # The fake GPU is a compute capability 9.0 one: Hopper, sm_90a.
        return tessel.precompile(source, constants, target="sm_90a", out_dir=str(bundles))


def test_precompile_writes_a_plain_bundle_once(tmp_path):
    path = tessel.precompile(ADD, {"BLOCK": 128}, out_dir=str(tmp_path))
    bundle = json.loads(open(path, encoding="utf-8").read())
    assert bundle["format"] == "tessel-bundle" and bundle["target"] == "sm_90"
    (kernel,) = bundle["kernels"]
    assert kernel["name"] == "add" and kernel["constants"]["BLOCK"] == 128
    assert [p["name"] for p in kernel["params"]] == ["x", "y", "out", "n"]
    assert ".entry add" in bundle["ptx"] and "sm_90" in bundle["ptx"]
    stamp = os.stat(path).st_mtime_ns
    assert tessel.precompile(ADD, {"BLOCK": 128}, out_dir=str(tmp_path)) == path
    assert os.stat(path).st_mtime_ns == stamp                 # found, not rewritten
    other = tessel.precompile(ADD, {"BLOCK": 256}, target="sm_80", out_dir=str(tmp_path))
    assert other != path and json.load(open(other))["target"] == "sm_80"


def test_precompile_errors(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="unknown target 'sm_70'"):
        tessel.precompile(ADD, target="sm_70", out_dir=str(tmp_path))
    monkeypatch.delenv("TESSEL_BUNDLE_DIR", raising=False)
    with pytest.raises(ValueError, match="give out_dir or set TESSEL_BUNDLE_DIR"):
        tessel.precompile(ADD)
    with pytest.raises(TypeError, match="kernel 'add' has no constexpr parameter 'BLOK'"):
        tessel.precompile(ADD, {"BLOK": 1}, out_dir=str(tmp_path))


def test_compile_with_a_gpu_compiles_a_bundle_and_caches_it(fake_gpu):
    kernel = tessel.compile(ADD, {"BLOCK": 64}, interpret=False)
    assert isinstance(kernel, tessel.GPUKernel) and not kernel.interpret
    assert kernel.constants["BLOCK"] == 64 and kernel.ir is None
    assert json.loads(kernel.bundle)["kernels"][0]["name"] == "add"
    again = tessel.compile(ADD, {"BLOCK": 64}, interpret=False)
    assert again.cache_hit and again.bundle == kernel.bundle


def test_runtime_only_finds_precompiled_bundles(runtime_only):
    _precompile(ADD, runtime_only, BLOCK=32)
    kernel = tessel.compile(ADD, {"BLOCK": 32})       # interpret=None: the GPU, no compiler here
    assert isinstance(kernel, tessel.GPUKernel) and kernel.cache_hit
    with pytest.raises(tessel.BundleNotFoundError,
                       match=r"kernel 'add' of <string> \(constants: BLOCK=64; target sm_90a\): "
                             r"no precompiled bundle in .*bundles, and this tessel has no "
                             r"compiler \(cannot open libtessel_compiler.so; .*\); precompile it"):
        tessel.compile(ADD, {"BLOCK": 64})
    with pytest.raises(RuntimeError, match=r"interpret=True: the interpreter is part of the "
                                           r"compiler, and this tessel has no compiler"):
        tessel.compile(ADD, {"BLOCK": 32}, interpret=True)


def test_runtime_only_none_pointers(runtime_only):
    """A kernel precompiled with a pointer None is found by a call that passes None there, which
    launches a null pointer; one that passes a buffer needs the other bundle."""
    _precompile(OPTIONAL_SUMS, runtime_only, sums=None)
    double = tessel.jit(OPTIONAL_SUMS)
    double[(2,)](CudaArray(1000), CudaArray(2000), None, 100)
    assert gpu.runtime().launches[-1] == ("double", [1000, 2000, 0, 100], 0, [2, 1, 1])
    with pytest.raises(tessel.BundleNotFoundError, match=r"kernel 'double' of <string> "
                                                         r"\(constants: none; target"):
        double[(2,)](CudaArray(1000), CudaArray(2000), CudaArray(3000), 100)


def test_precompile_command_line_none_pointer(tmp_path, capsys, monkeypatch):
    """python -m tessel.precompile --source F -D sums=None: the bundle marks the pointer."""
    # Importing the module tessel.precompile rebinds the package's name from the function.
    monkeypatch.setattr(tessel, "precompile", tessel.precompile)
    from tessel.precompile import main
    source = tmp_path / "optional_sums.tsl"
    source.write_text(OPTIONAL_SUMS)
    assert main(["--out", str(tmp_path / "out"), "--source", str(source), "-D", "sums=None",
                 "-D", "BLOCK=32"]) == 0
    bundle = json.loads(open(capsys.readouterr().out.strip()).read())
    (kernel,) = bundle["kernels"]
    assert bundle["version"] == 7 and kernel["constants"]["BLOCK"] == 32
    assert [p.get("none", False) for p in kernel["params"]] == [False, False, True, False]


def test_runtime_only_jit_and_the_missing_directory(runtime_only, monkeypatch):
    _precompile(ADD, runtime_only, BLOCK=16)
    add = tessel.jit(ADD)
    out = CudaArray(3000)
    add[(2,)](CudaArray(1000), CudaArray(2000), out, 20, BLOCK=16)
    assert gpu.runtime().launches[-1] == ("add", [1000, 2000, 3000, 20], 0, [2, 1, 1])
    monkeypatch.delenv("TESSEL_BUNDLE_DIR")
    with pytest.raises(tessel.BundleNotFoundError, match=r"TESSEL_BUNDLE_DIR \(unset\)"):
        tessel.compile(ADD, {"BLOCK": 16})


def test_gpu_arguments(fake_gpu):
    kernel = tessel.compile(ADD, {"BLOCK": 64}, interpret=False)
    x = np.zeros(4, np.float32)
    kernel[lambda meta: (tessel.cdiv(meta["n"], meta["BLOCK"]),)](
        CudaArray(10), 1 << 40, CudaArray(30), n=130)
    assert fake_gpu.launches[-1] == ("add", [10, 1 << 40, 30, 130], 0, [3, 1, 1])
    errors = [
        ((CudaArray(10, "<f2"), 0, 0, 1), TypeError,
         r"kernel 'add', argument 'x': expected a buffer of f32, got f16 \(typestr '<f2'\)"),
        ((x, 0, 0, 1), TypeError, r"argument 'x': expected a GPU buffer .* got ndarray; NumPy "
                                  r"arrays run with interpret=True"),
        ((DLPackOnly(x), 0, 0, 1), TypeError,
         r"argument 'x': a DLPack tensor on device type 1 id 0; pass one on cuda:0"),
        ((-8, 0, 0, 1), ValueError, r"argument 'x': a device address must not be negative"),
        ((0, 0, 0, 1.5), TypeError, r"argument 'n': i32 takes an integer, got float"),
        ((0, 0, 0, 2 ** 31), ValueError, r"argument 'n': 2147483648 does not fit in i32"),
        ((0, 0, "out", 1), TypeError, r"argument 'out': expected a GPU buffer"),
    ]
    for args, error, message in errors:
        with pytest.raises(error, match=message):
            kernel[(1,)](*args)
    assert len(fake_gpu.launches) == 1                       # nothing launched on bad input


def test_gpu_launches_check_multiple_of_hints(fake_gpu):
    kernel = tessel.compile(HINTED, interpret=False)
    bundle = json.loads(kernel.bundle)
    assert bundle["version"] == 3
    assert [p.get("multiple_of") for p in bundle["kernels"][0]["params"]] == [16, None, 8, 4]
    assert [p.multiple_of for p in kernel.params] == [16, None, 8, 4]
    kernel[(2,)](CudaArray(0x7f0000000010), CudaArray(0x1004), 8, -20)
    assert fake_gpu.launches[-1] == ("hinted", [0x7f0000000010, 0x1004, 8, -20], 0, [2, 1, 1])
    why = r" \(multiple_of in the kernel source\)"
    errors = [
        ((CudaArray(0x7f0000000002), CudaArray(0), 8, 4),
         r"kernel 'hinted': argument 'x' = 0x7f0000000002 is not 16-byte aligned" + why),
        ((0x1008, CudaArray(0), 8, 4),
         r"kernel 'hinted': argument 'x' = 0x1008 is not 16-byte aligned" + why),
        ((CudaArray(0x1000), CudaArray(0), 12, 4),
         r"kernel 'hinted': argument 'n' = 12 is not a multiple of 8" + why),
        ((CudaArray(0x1000), CudaArray(0), 8, 2 ** 40 + 2),
         r"kernel 'hinted': argument 'stride' = 1099511627778 is not a multiple of 4" + why),
    ]
    for args, message in errors:
        with pytest.raises(ValueError, match=message):
            kernel[(1,)](*args)
    assert len(fake_gpu.launches) == 1                       # nothing launched on bad input


def test_dlpack_info_reads_without_consuming():
    x = np.arange(6, dtype=np.float32)[2:]
    capsule = x.__dlpack__()
    address, device_type, device_id, code, bits, lanes = _tessel.dlpack_info(capsule)
    assert (address, device_type, device_id) == (x.ctypes.data, 1, 0)
    assert (code, bits, lanes) == (2, 32, 1)
    assert _tessel.dlpack_info(capsule)[0] == address      # still a 'dltensor'
    with pytest.raises(ValueError, match="not an unconsumed DLPack capsule"):
        _tessel.dlpack_info(_other_capsule())


def _other_capsule():
    import ctypes
    pycapsule_new = ctypes.pythonapi.PyCapsule_New
    pycapsule_new.restype = ctypes.py_object
    pycapsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return pycapsule_new(id(pycapsule_new), b"used_dltensor", None)


def test_persistent_gpu_kernels_size_their_own_grid(fake_gpu):
    lean = tessel.compile(LEAN, {"D": 16, "BLOCK_N": 32}, kernel="lean_attention",
                          interpret=False)
    assert lean.persistent
    # 16-byte aligned addresses: the kernel's multiple_of hints are checked.
    args = [CudaArray(a, "<f2") for a in (16, 32, 48, 64)] + [CudaArray(80)] + [0] * 9 + \
        [1, 2, 1, 1, 7, 0.25]
    lean(*args)
    name, _, stream, grid = fake_gpu.launches[-1]
    assert (name, stream, grid) == ("lean_attention", 0, None)
    with pytest.raises(TypeError, match="programs= sets the interpreter's program count"):
        lean(*args, programs=4)
    with pytest.raises(TypeError, match="is persistent"):
        lean[(4,)]


def test_gpu_configurations_compile(tmp_path, monkeypatch):
    """Every kernel the ops launch on the GPU, for one head dim and dtype, compiles."""
    monkeypatch.setattr(tessel, "precompile", tessel.precompile)   # as above
    from tessel.precompile import precompile_ops
    configs = tessel.ops.gpu_configurations((64,), ("bf16",), ((3, 5),))
    kernels = {name for _, name, _, _ in configs}
    assert kernels == {"attention_fwd", "attention_bwd", "attention_bwd_preprocess",
                       "lean_attention", "lean_attention_paged", "mta_fwd", "mta_bwd", "mta_bwd_preprocess",
                       "mta_decode_split", "mta_decode_combine", "attention_kl_fwd",
                       "attention_kl_bwd", "softmax_merge_parts", "kl_merge_parts", "scaled_cast"}
    paths = precompile_ops(str(tmp_path), "sm_90", (64,), ("bf16",), ((3, 5),), jobs=2)
    assert len(set(paths)) == len(configs) == len(os.listdir(tmp_path))


def test_mta_forward_forms_on_hopper(tmp_path, monkeypatch):
    """On sm_90a MTA's forward takes the convolved keys with their own tiles (and
    mta_conv_keys before it) up to cq·D = 384; deeper windows take the direct form with its
    own tiles (no warp-specialised schedule meant for the convolved keys), and both compile."""
    monkeypatch.setattr(tessel, "precompile", tessel.precompile)   # as above
    from tessel.precompile import precompile_ops
    windows = ((6, 11), (8, 15))
    configs = [(name, c) for _, name, c, _ in
               tessel.ops.gpu_configurations((64,), ("bf16",), windows, target="sm_90a")
               if name.startswith("mta_fwd") or name == "mta_conv_keys"]
    forms = {(c["CQ"], name): c for name, c in configs}
    assert set(forms) == {(6, "mta_conv_keys"), (6, "mta_fwd"), (8, "mta_fwd")}
    folded, direct = forms[(6, "mta_fwd")], forms[(8, "mta_fwd")]
    assert folded["CONV_KEYS"] and folded.get("WARP_SPECIALIZE") and folded["BLOCK_M"] == 128
    assert not direct["CONV_KEYS"] and not direct.get("WARP_SPECIALIZE")
    assert not direct.get("PING_PONG")
    paths = precompile_ops(str(tmp_path), "sm_90a", (64,), ("bf16",), windows, jobs=2)
    assert len(set(paths)) == len(os.listdir(tmp_path))
