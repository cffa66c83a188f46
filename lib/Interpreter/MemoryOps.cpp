//===- MemoryOps.cpp - load, store, atomic_add ----------------------------===//
//
// Lanes whose mask is false are not accessed at all: their address may be
// anything. A masked-off load lane gives `other` (0 without it); a
// masked-off atomic lane returns 0. An unmasked lane outside its buffer is an
// error naming the buffer, the element, the buffer's size and the lane.
// Atomic lanes are applied in row-major lane order, so lanes hitting the
// same element all take effect.
//
// A tensor descriptor is its base pointer (one pointer lane) and its sizes
// then strides (integer lanes, the innermost stride 1 included). A block
// load reads the elements inside the array and gives 0 outside it, as the
// tensor memory accelerator does.
//
// tessel.flag_signal adds one arrival to an i32 flag; tessel.flag_wait
// clears a flag that has counted its arrivals. Programs run one after
// another, so a wait that finds arrivals missing can never be satisfied: it
// is reported as a deadlock. (Matched by name: the ops are produced by
// tessel-lower-stream-k.)
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

LogicalResult Executor::execMakeTensorDesc(Operation *op) {
  auto make = cast<ts::MakeTensorDescOp>(op);
  RtValue desc;
  desc.ptrs = get(make.getBase()).ptrs;
  for (Value v : make.getShape())
    desc.ints.push_back(get(v).ints[0]);
  for (Value v : make.getStrides())
    desc.ints.push_back(get(v).ints[0]);
  desc.ints.push_back(1);
  set(make.getResult(), std::move(desc));
  return success();
}

LogicalResult Executor::execLoadBlock(Operation *op) {
  auto load = cast<ts::LoadBlockOp>(op);
  auto type = cast<ts::TensorDescType>(load.getDesc().getType());
  const RtValue &desc = get(load.getDesc());
  unsigned rank = type.getRank();
  ArrayRef<int64_t> sizes = ArrayRef<int64_t>(desc.ints).take_front(rank);
  ArrayRef<int64_t> strides = ArrayRef<int64_t>(desc.ints).drop_front(rank);
  SmallVector<int64_t> start;
  for (Value c : load.getCoords())
    start.push_back(get(c).ints[0]);
  SmallVector<unsigned> tileDims = type.getTileDims();
  ArrayRef<int64_t> shape = shapeOf(load.getType());
  ElemKind kind = ElemType::get(load.getType())->kind;
  RtValue out = RtValue::lanes(kind, shape);
  RtValue ptr;
  ptr.ptrs.resize(1);
  Access access{&ptr, nullptr, {}};
  for (size_t i = 0, n = out.numLanes(); i < n; ++i) {
    SmallVector<int64_t> index(start);
    // Row-major lane i of the tile, spread over the block's dimensions.
    int64_t rest = i;
    for (size_t t = tileDims.size(); t-- > 0;) {
      index[tileDims[t]] += rest % shape[t];
      rest /= shape[t];
    }
    PtrLane &p = ptr.ptrs[0];
    p = desc.ptrs[0];
    bool inside = true;
    for (unsigned d = 0; d < rank; ++d) {
      inside &= index[d] >= 0 && index[d] < sizes[d];
      p.offset += index[d] * strides[d];
    }
    if (!inside)
      continue;
    if (auto why = checkBounds(memory, access, 0, "block load"))
      return fail(op, *why + " (block element " + laneName(shape, i) + ")");
    out.setLane(kind, i, loadLane(memory, kind, p));
  }
  set(load.getResult(), std::move(out));
  return success();
}

LogicalResult Executor::execFlag(Operation *op, bool signal) {
  Value flag = op->getOperand(0);
  Access access = accessOf(flag, nullptr);
  if (auto why = checkBounds(memory, access, 0, op->getName().getStringRef()))
    return fail(op, *why);
  PtrLane p = access.ptrs->ptrs[0];
  int64_t arrivals = memory.getInt(p.buffer, p.offset);
  if (signal) {
    memory.setInt(p.buffer, p.offset, arrivals + 1);
    return success();
  }
  int64_t count = 1;
  if (auto wait = dyn_cast<ts::FlagWaitOp>(op); wait && wait.getCount())
    count = get(wait.getCount()).ints[0];
  if (arrivals < count)
    return fail(op, "deadlock: flag_wait on buffer #" + Twine(p.buffer) +
                        " element " + Twine(p.offset) + " finds " +
                        Twine(arrivals) + " of " + Twine(count) +
                        " arrivals: in the interpreter's sequential "
                        "schedule (descending program order) nothing can "
                        "signal it while this program waits");
  memory.setInt(p.buffer, p.offset, 0);
  return success();
}

Executor::OptResult Executor::execMemoryOp(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name == "tessel.flag_signal" || name == "tessel.flag_wait")
    return execFlag(op, name == "tessel.flag_signal");
  if (isa<ts::LoadOp>(op))
    return execLoad(op);
  if (isa<ts::MakeTensorDescOp>(op))
    return execMakeTensorDesc(op);
  if (isa<ts::LoadBlockOp>(op))
    return execLoadBlock(op);
  if (isa<ts::StoreOp>(op))
    return execStore(op);
  if (isa<ts::AtomicAddOp>(op))
    return execAtomicAdd(op);
  return std::nullopt;
}

} // namespace tessel
