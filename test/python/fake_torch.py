"""A stand-in for the few parts of PyTorch the GPU path of the package touches, so that the ops'
GPU path and the launch fast path run on machines without a GPU (or PyTorch): tensors are
shapes, strides, dtypes and device addresses, without data (the stand-in driver,
libTesselFakeCuda.so, records launches without running them). Installed as sys.modules["torch"]
by the fake_torch fixture of test_fast_launch.py."""

import math
import types


class dtype:
    def __init__(self, name, itemsize, is_floating_point):
        self.name, self.itemsize, self.is_floating_point = name, itemsize, is_floating_point

    def __repr__(self):
        return f"torch.{self.name}"


float16 = dtype("float16", 2, True)
bfloat16 = dtype("bfloat16", 2, True)
float32 = dtype("float32", 4, True)
int32 = dtype("int32", 4, False)
int64 = dtype("int64", 8, False)
bool = dtype("bool", 1, False)  # noqa: A001  (torch's name)
contiguous_format = "contiguous_format"


class device:
    def __init__(self, spec, index=None):
        kind, _, number = str(spec).partition(":")
        self.type = kind
        self.index = int(number) if number else index

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return f"device(type='{self.type}', index={self.index})"


class _Allocator:
    """Device addresses as PyTorch's caching allocator hands them out: 512-byte aligned."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.next = 0x7F0000000000

    def take(self, nbytes):
        if nbytes == 0:                     # as PyTorch's: an empty tensor has no memory
            return 0
        address = self.next
        self.next += max(512, -(-nbytes // 512) * 512)
        return address


allocator = _Allocator()


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class Tensor:
    def __init__(self, shape, dtype_, device_, address=None, strides=None):
        self.shape = tuple(shape)
        self.dtype = dtype_
        self.device = device_
        self._strides = tuple(strides) if strides else _contiguous_strides(self.shape)
        nbytes = math.prod(self.shape) * dtype_.itemsize
        self._address = allocator.take(nbytes) if address is None else address
        self.requires_grad = False

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def get_device(self):
        return self.device.index if self.is_cuda else -1

    def data_ptr(self):
        return self._address

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def clone(self, memory_format=None):
        return Tensor(self.shape, self.dtype, self.device)

    def new_empty(self, shape):
        return Tensor((shape,) if isinstance(shape, int) else shape, self.dtype, self.device)

    new_zeros = new_empty

    def view_at(self, offset_bytes):
        """The same tensor starting `offset_bytes` further (a misaligned view)."""
        return Tensor(self.shape, self.dtype, self.device, self._address + offset_bytes,
                      self._strides)


def empty(shape, dtype=None, device=None):  # noqa: A002  (torch's names)
    return Tensor(shape, dtype or float32, device)


zeros = empty


# torch.no_grad() in a test: set it False (is_grad_enabled reads it, as torch's reads its state).
grad_enabled = True


def is_grad_enabled():
    return grad_enabled


class _Cuda:
    """torch.cuda: the current stream (a raw CUstream int), settable by the tests."""

    def __init__(self):
        self.stream = 0

    def current_stream(self, device=None):
        return types.SimpleNamespace(cuda_stream=self.stream)


cuda = _Cuda()
_C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: cuda.stream)


def randn(*shape, dtype=float16):
    return Tensor(shape, dtype, device("cuda", 0))
