"""Launch plans of the ready ops on the GPU: a repeated call costs its key, a dict lookup and one
C++ call (the extension's Plan), which makes the output allocations and launches the kernels.

An op's first call with PyTorch tensors of given shapes, strides, dtypes and device (and given
other arguments) runs its checked path while a recorder notes the buffers it allocates and the
kernels it launches. If every buffer those kernels receive is an input or one of those
allocations, the recording becomes a plan, kept under the call's key (key()): every scalar and
grid the kernels received is a function of the key, so a later call with the same key only
allocates the outputs (PyTorch's caching allocator), fills the recorded launches (prepared once
by the runtime: Runtime.prepare) with the new buffers and launches them on the current stream.

No plan is made, and the op always takes its checked path, where it copies an input first
(strides the kernels do not take). An op called for autograd (an input that requires grad, in
grad mode) keeps no plan for the call itself; its autograd function's forward and backward keep
their own (call(): keyed inside them, where grad mode is off, on the tensors their kernels take).
An input misaligned for the kernels' multiple_of hints makes the plan's launch decline, and the
op takes its checked path (which copies it) for that call.
"""

import sys

from .. import gpu
from .._backend import _tessel

# Plans kept per op; past that the oldest go (shapes that change every call, e.g. a growing
# decode context, must not grow the memory without bound).
MAX_PLANS = 256


def key(tensors, *others, autograd=False):
    """The plan key of a call with these input tensors and other (hashable) arguments: each
    tensor's shape, strides, dtype and device index, then `others`. None where no plan applies:
    an input that is not a torch tensor, or autograd (an input that requires grad, grad mode on).
    With autograd, the key of a call for autograd instead (its parts and which inputs require
    grad; None for any other call): where the op keeps the arguments it checked."""
    parts, grads = [], False
    try:
        for x in tensors:
            needs = x.requires_grad and sys.modules["torch"].is_grad_enabled()
            if needs and not autograd:
                return None
            grads |= needs
            parts += (x.shape, x.stride(), x.dtype, x.get_device())
            if autograd:
                parts.append(x.requires_grad)
    except (AttributeError, TypeError):
        return None
    if autograd and not grads:
        return None
    parts += others
    return tuple(parts)


class Recorder:
    """What one checked call allocates and launches (see gpu.recorder)."""

    def __init__(self, inputs):
        self.inputs = inputs
        self.allocations = []   # (tensor, () -> a new tensor like it)
        self.launched_kernels = []  # (rt_kernel, params, values, converted args, grid)

    def allocated(self, tensor, allocate):
        """`tensor` was allocated; allocate() makes a new one like it."""
        self.allocations.append((tensor, allocate))

    def launched(self, rt_kernel, params, values, args, grid):
        self.launched_kernels.append((rt_kernel, params, values, args, grid))

    def plan(self, results):
        """The Plan (the extension's: allocations, then prepared launches, in one call)
        replaying this recording with `results` (tensors, or None for an output the
        call left out) returned, or None if a kernel received a buffer that is neither an input
        nor an allocation."""
        buffers = [*self.inputs, *(t for t, _ in self.allocations)]
        index = {id(b): i for i, b in enumerate(buffers)}   # all alive: ids are unique
        launches = []
        for rt_kernel, params, values, args, grid in self.launched_kernels:
            slots, template = [], []
            for p, value, arg in zip(params, values, args):
                if p.kind == "ptr" and not p.none:  # a pointer compiled as None stays null
                    if id(value) not in index:
                        return None
                    slots.append(index[id(value)])
                    arg = 0                 # a placeholder: each call passes the buffer
                template.append(arg)
            launches.append((gpu.runtime().prepare(rt_kernel, template, grid), slots))
        if any(r is not None and id(r) not in index for r in results):
            return None
        return _tessel.Plan([f for _, f in self.allocations], launches,
                            [None if r is None else index[id(r)] for r in results])


class Plans:
    """The plans of one op by key."""

    def __init__(self):
        self._plans = {}

    def get(self, call_key):
        try:
            return self._plans.get(call_key)
        except TypeError:                   # an unhashable argument: no plan
            return None

    def replay(self, call_key, *inputs):
        """The outputs (a list) of the plan kept for call_key run on `inputs`, or None: no plan,
        or its launch declined the inputs (the op then takes its checked path)."""
        plan = self.get(call_key)
        return None if plan is None else plan(*inputs)

    def run(self, call_key, be, inputs, forward):
        """forward(*inputs) (the op's checked path: a tuple of tensors); on the GPU with a key,
        recorded into a plan for that key (unless an enclosing recording already sees it)."""
        if not be.gpu or call_key is None or gpu.recorder() is not None:
            return forward(*inputs)
        rec = Recorder(inputs)
        gpu.set_recorder(rec)
        try:
            results = forward(*inputs)
        finally:
            gpu.set_recorder(None)
        plan = rec.plan(results)
        if plan is not None:
            self.keep(call_key, plan)
        return results

    def keep(self, call_key, value):
        """Keeps `value` (a plan, or the checked arguments of a call for autograd) for
        call_key, the oldest going past MAX_PLANS."""
        if call_key is None:
            return
        if len(self._plans) >= MAX_PLANS:
            del self._plans[next(iter(self._plans))]
        try:
            self._plans[call_key] = value
        except TypeError:                   # an unhashable argument (a list): not kept
            pass

    def call(self, be, inputs, others, forward):
        """The outputs of forward(*inputs) (a sequence of tensors): the plan kept for the key
        of `inputs` and `others` (a tuple of the call's other arguments) replayed, else the
        checked path run (and recorded, see run)."""
        call_key = key(inputs, *others)
        out = self.replay(call_key, *inputs)
        return out if out is not None else self.run(call_key, be, inputs, forward)

    def __len__(self):
        return len(self._plans)
