//===- MemoryOps.cpp - load, store, atomic_add ----------------------------===//
//
// Lanes whose mask is false are not accessed at all: their address may be
// anything. A masked-off load lane gives `other` (0 without it); a
// masked-off atomic lane returns 0. An unmasked lane outside its buffer is an
// error naming the buffer, the element, the buffer's size and the lane.
// Atomic lanes are applied in row-major lane order, so lanes hitting the
// same element all take effect.
//
// tessel.flag_signal sets an i32 flag to 1; tessel.flag_wait clears a set
// flag. Programs run one after another, so a wait that finds its flag
// unset can never be satisfied: it is reported as a deadlock. (Matched by
// name: the ops are produced by tessel-lower-stream-k.)
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "tessel/TesselDialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace ts = mlir::tessel;

namespace tessel {
using namespace detail;

/// Fails unless lane `lane` of `access` points inside its buffer.
static std::optional<std::string> checkBounds(const Memory &memory,
                                              const Access &access, size_t lane,
                                              StringRef what) {
  PtrLane p = access.ptrs->ptrs[lane];
  if (memory.isValid(p.buffer) && p.offset >= 0 &&
      static_cast<uint64_t>(p.offset) < memory.size(p.buffer))
    return std::nullopt;
  std::string text = ("out-of-bounds " + what + " of buffer #" +
                      Twine(p.buffer) + " at element " + Twine(p.offset))
                         .str();
  if (memory.isValid(p.buffer))
    text += " (size " + std::to_string(memory.size(p.buffer)) + ")";
  if (!access.shape.empty())
    text += " in lane " + laneName(access.shape, lane);
  return text;
}

static Lane loadLane(const Memory &memory, ElemKind kind, PtrLane p) {
  Lane l;
  if (kind == ElemKind::Float)
    l.f = memory.getFloat(p.buffer, p.offset);
  else
    l.i = memory.getInt(p.buffer, p.offset);
  return l;
}

static void storeLane(Memory &memory, ElemKind kind, PtrLane p, Lane l) {
  if (kind == ElemKind::Float)
    memory.setFloat(p.buffer, p.offset, l.f);
  else
    memory.setInt(p.buffer, p.offset, l.i);
}

Access Executor::accessOf(Value ptr, Value mask) {
  return Access{&get(ptr), mask ? &get(mask) : nullptr, shapeOf(ptr.getType())};
}

LogicalResult Executor::execLoad(Operation *op) {
  auto load = cast<ts::LoadOp>(op);
  Access access = accessOf(load.getPtr(), load.getMask());
  ElemKind kind = ElemType::get(load.getType())->kind;
  const RtValue *other = load.getOther() ? &get(load.getOther()) : nullptr;
  RtValue out = RtValue::lanes(kind, access.shape);
  for (size_t i = 0, n = out.numLanes(); i < n; ++i) {
    if (!access.active(i)) {
      if (other)
        out.setLane(kind, i, other->lane(kind, i));
      continue;
    }
    if (auto why = checkBounds(memory, access, i, "load"))
      return fail(op, *why);
    out.setLane(kind, i, loadLane(memory, kind, access.ptrs->ptrs[i]));
  }
  set(load.getResult(), std::move(out));
  return success();
}

LogicalResult Executor::execStore(Operation *op) {
  auto store = cast<ts::StoreOp>(op);
  Access access = accessOf(store.getPtr(), store.getMask());
  ElemKind kind = ElemType::get(store.getValue().getType())->kind;
  const RtValue &value = get(store.getValue());
  for (size_t i = 0, n = access.ptrs->numLanes(); i < n; ++i) {
    if (!access.active(i))
      continue;
    if (auto why = checkBounds(memory, access, i, "store"))
      return fail(op, *why);
    storeLane(memory, kind, access.ptrs->ptrs[i], value.lane(kind, i));
  }
  return success();
}

LogicalResult Executor::execAtomicAdd(Operation *op) {
  auto atomic = cast<ts::AtomicAddOp>(op);
  Access access = accessOf(atomic.getPtr(), atomic.getMask());
  ElemType elem = *ElemType::get(atomic.getValue().getType());
  const RtValue &value = get(atomic.getValue());
  RtValue old = RtValue::lanes(elem.kind, access.shape);
  for (size_t i = 0, n = old.numLanes(); i < n; ++i) {
    if (!access.active(i))
      continue;
    if (auto why = checkBounds(memory, access, i, "atomic_add"))
      return fail(op, *why);
    PtrLane p = access.ptrs->ptrs[i];
    Lane prev = loadLane(memory, elem.kind, p), next;
    if (elem.kind == ElemKind::Float)
      next.f = roundFloat(elem.format, prev.f + value.floats[i]);
    else
      next.i = wrapInt(
          static_cast<int64_t>(static_cast<uint64_t>(prev.i) + value.ints[i]),
          elem.width);
    storeLane(memory, elem.kind, p, next);
    old.setLane(elem.kind, i, prev);
  }
  set(atomic.getResult(), std::move(old));
  return success();
}

LogicalResult Executor::execFlag(Operation *op, bool signal) {
  Value flag = op->getOperand(0);
  Access access = accessOf(flag, nullptr);
  if (auto why = checkBounds(memory, access, 0, op->getName().getStringRef()))
    return fail(op, *why);
  PtrLane p = access.ptrs->ptrs[0];
  if (signal) {
    memory.setInt(p.buffer, p.offset, 1);
    return success();
  }
  if (memory.getInt(p.buffer, p.offset) == 0)
    return fail(op,
                "deadlock: flag_wait on buffer #" + Twine(p.buffer) +
                    " element " + Twine(p.offset) +
                    " finds the flag unset: in the interpreter's sequential "
                    "schedule (descending program order) nothing can set "
                    "it while this program waits");
  memory.setInt(p.buffer, p.offset, 0);
  return success();
}

Executor::OptResult Executor::execMemoryOp(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name == "tessel.flag_signal" || name == "tessel.flag_wait")
    return execFlag(op, name == "tessel.flag_signal");
  if (isa<ts::LoadOp>(op))
    return execLoad(op);
  if (isa<ts::StoreOp>(op))
    return execStore(op);
  if (isa<ts::AtomicAddOp>(op))
    return execAtomicAdd(op);
  return std::nullopt;
}

} // namespace tessel
