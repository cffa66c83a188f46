"""The CUDA runtime bindings, against no driver and against the stand-in driver of the C++ tests
(libTesselFakeCuda.so: host memory, launches recorded but not run). Defined only when the
extension was built with the runtime (TESSEL_ENABLE_CUDA_RUNTIME)."""

import gc
import os

import numpy as np
import pytest

import tessel

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(tessel.__file__))))
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FAKE_DRIVER = os.path.join(BUILD_DIR, "bin", "libTesselFakeCuda.so")
VECTOR_ADD = os.path.join(ROOT, "test", "Unit", "Runtime", "Inputs", "vector_add.bundle")
CLUSTERS = os.path.join(ROOT, "test", "Unit", "Runtime", "Inputs", "clusters.bundle")

if tessel._tessel.has_runtime:
    Runtime = tessel._tessel.Runtime

    def test_missing_driver_is_a_device_error():
        with pytest.raises(tessel.DeviceError, match=r"no CUDA driver found "
                                                     r"\(libtessel-no-such-driver.so.1: "):
            Runtime(driver_library="libtessel-no-such-driver.so.1")

    def test_load_copy_and_launch():
        rt = Runtime(driver_library=FAKE_DRIVER)
        assert rt.multiprocessor_count == 4
        module = rt.load_bundle(VECTOR_ADD)
        assert module.kernel_names() == ["vector_add"]
        k = module.kernel("vector_add")
        assert k.params == [("x", "ptr", "f32", None, False), ("y", "ptr", "f32", None, False),
                            ("out", "ptr", "f32", None, False), ("n", "i32", "", None, False)]
        assert (k.num_warps, k.shared_bytes, k.persistent, k.cluster) == (8, 0, False, 1)
        ptr = rt.alloc(64)
        src = np.arange(16, dtype=np.float32)
        rt.copy_to_device(ptr, src)
        back = np.zeros(16, np.float32)
        rt.copy_to_host(back, ptr)
        np.testing.assert_array_equal(back, src)
        rt.fill(ptr, 0, 64)
        rt.copy_to_host(back, ptr)
        np.testing.assert_array_equal(back, 0)
        rt.launch(k, [ptr, ptr, ptr, 16])
        rt.synchronize()
        with pytest.raises(ValueError, match="kernel 'vector_add' takes 4 arguments, got 3"):
            rt.launch(k, [ptr, ptr, ptr])
        with pytest.raises(ValueError, match="argument 'n': 2147483648 does not fit in i32"):
            rt.launch(k, [ptr, ptr, ptr, 2 ** 31])
        with pytest.raises(ValueError, match="copy_to_host: the array must be C-contiguous"):
            rt.copy_to_host(np.zeros(32, np.float32)[::2], ptr)
        rt.free(ptr)

    def test_load_errors():
        rt = Runtime(driver_library=FAKE_DRIVER)
        with pytest.raises(tessel.DeviceError, match="cannot open bundle '/no/such.bundle'"):
            rt.load_bundle("/no/such.bundle")
        with pytest.raises(tessel.DeviceError, match="bad.bundle"):
            rt.load_bundle_from_string("{}", "bad.bundle")
        with pytest.raises(tessel.DeviceError, match="no kernel 'nope'"):
            rt.load_bundle(VECTOR_ADD).kernel("nope")

    def test_cluster_sizes():
        module = Runtime(driver_library=FAKE_DRIVER).load_bundle(CLUSTERS)
        assert [module.kernel(name).cluster for name in ("split", "reduce")] == [2, 16]

    def test_handles_keep_the_runtime_alive():
        k = Runtime(driver_library=FAKE_DRIVER).load_bundle(VECTOR_ADD).kernel("vector_add")
        gc.collect()
        assert k.name == "vector_add" and len(k.params) == 4

    @pytest.mark.skipif(not tessel._tessel.has_compiler, reason="needs the compiler")
    def test_hints_round_trip_and_are_checked_by_the_runtime():
        """The compiler's bundle writer and the runtime's strict reader agree on "multiple_of",
        and the runtime itself (past the package's own check) refuses a broken hint."""
        from kernels_for_tests import HINTED
        bundle = tessel._tessel.compile_bundle(HINTED, "hinted.tsl", "hinted", {})
        rt = Runtime(driver_library=FAKE_DRIVER)
        k = rt.load_bundle_from_string(bundle, "hinted.bundle").kernel("hinted")
        assert k.params == [("x", "ptr", "f32", 16, False), ("out", "ptr", "f32", None, False),
                            ("n", "i32", "", 8, False), ("stride", "i64", "", 4, False)]
        ptr = rt.alloc(256)
        rt.launch(k, [ptr, ptr, 8, 4], grid=[1])
        with pytest.raises(tessel.LaunchError, match=r"kernel 'hinted': argument 'x' = 0x[0-9a-f]+ "
                                                     r"is not 16-byte aligned"):
            rt.launch(k, [ptr + 4, ptr, 8, 4], grid=[1])
        with pytest.raises(tessel.LaunchError, match=r"kernel 'hinted': argument 'n' = 4 is not "
                                                     r"a multiple of 8"):
            rt.launch(k, [ptr, ptr, 4, 4], grid=[1])
        rt.free(ptr)
