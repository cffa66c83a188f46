"""Is there an NVIDIA GPU that Tessel's kernels run on?  Asks the CUDA driver, as the runtime does
(libcuda.so.1: cuInit, the device count, device 0's name and compute capability).

    python3 scripts/gpu/find_gpu.py     # exit 0: "NAME<TAB>MAJOR.MINOR<TAB>TARGET" on stdout
                                        # exit 1: why not, on stdout

TARGET is the architecture tesselc compiles for: sm_90a on compute capability 9.0 (Hopper's
warpgroup MMA), sm_90 on later GPUs (the driver JIT-compiles its PTX for them), sm_80 on 8.x.
"""

import ctypes
import sys

CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


def find():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        return None, f"no CUDA driver ({error})"
    result = cuda.cuInit(0)
    if result != 0:
        return None, f"the CUDA driver finds no usable device (cuInit: error {result})"
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return None, "the CUDA driver finds no device"
    device = ctypes.c_int(0)
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    if (cuda.cuDeviceGet(ctypes.byref(device), 0) != 0
            or cuda.cuDeviceGetAttribute(ctypes.byref(major),
                                         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) != 0
            or cuda.cuDeviceGetAttribute(ctypes.byref(minor),
                                         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) != 0):
        return None, "the CUDA driver cannot describe device 0"
    name = ctypes.create_string_buffer(256)
    gpu = "device 0"
    if hasattr(cuda, "cuDeviceGetName") and cuda.cuDeviceGetName(name, len(name), device) == 0:
        gpu = name.value.decode(errors="replace")
    cc = f"{major.value}.{minor.value}"
    if (major.value, minor.value) == (9, 0):
        target = "sm_90a"
    elif major.value >= 9:
        target = "sm_90"
    elif major.value == 8:
        target = "sm_80"
    else:
        return None, f"{gpu} (compute capability {cc}) is older than the sm_80 that Tessel targets"
    return f"{gpu}\t{cc}\t{target}", None


if __name__ == "__main__":
    try:
        found, why = find()
    except Exception as error:  # a driver missing an entry point, or one that misbehaves
        found, why = None, f"the CUDA driver cannot be queried ({error})"
    print(found or why)
    sys.exit(0 if found else 1)
