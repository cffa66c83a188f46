//===- Utils.h - Shared pieces of the tessel-to-LLVM patterns ---*- C++ -*-===//
//
// Barriers, predication, shared-memory scratch and thread identity: what
// the lowering patterns of several op families need.
//
// Shared memory: every op that moves data between threads uses the CTA's one
// dynamic shared-memory buffer from byte 0, and brackets its use with
// barriers (one before writing, so the previous user's readers are done, one
// between writing and reading). Ops therefore never overlap in shared memory
// and the kernel needs the largest scratch area of its ops
// (getScratchBytes), not their sum.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_CONVERSION_UTILS_H
#define TESSEL_CONVERSION_UTILS_H

#include "Conversion/TesselToLLVM/TesselToLLVM.h"
#include "Conversion/TesselToLLVM/TileLayout.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

namespace mlir::tessel {

/// The values a thread holds of a lowered tile, one per slot.
using Slots = SmallVector<Value>;

void populateElementwisePatterns(LLVMTypeConverter &converter,
                                 RewritePatternSet &patterns);
/// Elements of one global access of each load and store whose thread runs
/// the AxisInfo analysis shows contiguous, aligned and uniformly masked
/// (absent: one element per access).
AccessWidths getAccessWidths(ModuleOp module);
/// The dimension along which a thread holds its longest run of elements
/// (the last of equals: the fastest in row-major tiles).
unsigned runDimension(const TileLayout &layout);
/// Elements of one access of a thread's run along `dim` of `tile`, whose
/// elements take `bits` bits in memory: the run, cut to `limit`, to 16 bytes
/// and to a power of two dividing the run and the tile's extent, in whole
/// 32-bit words; 1 if none (sub-byte elements never pack).
int64_t runWidth(TileType tile, unsigned dim, unsigned bits,
                 int64_t limit = std::numeric_limits<int64_t>::max());
/// The slots of a thread's accesses of `width` elements along `dim`: each
/// group is `width` slots consecutive along it, the first one first.
SmallVector<SmallVector<int64_t>> accessGroups(TileType tile, unsigned dim,
                                               int64_t width);
void populateMemoryPatterns(LLVMTypeConverter &converter,
                            RewritePatternSet &patterns,
                            const AccessWidths &widths);
/// Patterns that read the access width the analysis gave their op.
template <typename OpTy> struct VectorisedPattern : OpConversionPattern<OpTy> {
  VectorisedPattern(LLVMTypeConverter &converter, const AccessWidths &widths)
      : OpConversionPattern<OpTy>(converter, &converter.getContext()),
        widths(widths) {}
  int64_t widthOf(Operation *op) const { return widths.lookup(op) ?: 1; }
  const AccessWidths &widths;
};
void populateLayoutPatterns(LLVMTypeConverter &converter,
                            RewritePatternSet &patterns);
void populateReducePatterns(LLVMTypeConverter &converter,
                            RewritePatternSet &patterns);
void populateDotPatterns(LLVMTypeConverter &converter,
                         RewritePatternSet &patterns);

/// Bytes of shared-memory scratch `op` uses once lowered (0 for none).
int64_t getScratchBytes(Operation *op);
/// Bytes an element of `type` takes in shared memory.
int64_t getSharedBytes(Type type);

/// A tile type's layout; the conversion checks encodings up front, so this
/// does not fail on the types it sees.
TileLayout getLayout(Type tileType);

Value i32Constant(OpBuilder &b, Location loc, int64_t v);
/// shfl.sync.bfly of any scalar (carried in one or two 32-bit registers):
/// the value of lane (this lane ^ laneMask); every lane of the warp takes
/// part.
Value shuffleXor(OpBuilder &b, Location loc, Value v, unsigned laneMask);
/// A vector of `elements` (values of one type), lane i = elements[i].
Value vectorOf(OpBuilder &b, Location loc, ValueRange elements);
/// Lane `lane` of a vector.
Value laneOf(OpBuilder &b, Location loc, Value vector, int64_t lane);
/// The origin of a slice of `sizes` inside `bounds` with `offsets`: the
/// constant ones as attributes, each ShapedType::kDynamic one as the next
/// of the converted runtime offsets `dynamic` (one i32 each) clamped into
/// [0, bound - size].
SmallVector<OpFoldResult> sliceOrigin(OpBuilder &b, Location loc,
                                      ArrayRef<int64_t> offsets,
                                      ArrayRef<ValueRange> dynamic,
                                      ArrayRef<int64_t> sizes,
                                      ArrayRef<int64_t> bounds);
/// `c` shifted by an origin coordinate of sliceOrigin (no add for 0).
Value addOffset(OpBuilder &b, Location loc, Value c, OpFoldResult offset);
/// `x && y` where a null operand means true.
Value andPredicates(OpBuilder &b, Location loc, Value x, Value y);
/// Whether this thread is the first of the threads running this code: the
/// CTA, or inside tessel.warp_specialize the threads of that region.
Value isThreadZero(OpBuilder &b, Location loc);
/// A barrier of the threads running this code (as isThreadZero's).
void emitBarrier(OpBuilder &b, Location loc);
/// bar.sync on hardware barrier `id` until `threads` threads have arrived.
void emitNamedBarrier(OpBuilder &b, Location loc, Value id, int64_t threads);
/// Emits `body` under `cond`, or unconditionally if `cond` is null.
void emitIf(OpBuilder &b, Location loc, Value cond,
            function_ref<void(OpBuilder &)> body);
/// `then()` where `cond` holds, `otherwise` elsewhere; `then` is only
/// evaluated under `cond` (for loads and atomics that must not run).
Value emitIfElse(OpBuilder &b, Location loc, Value cond,
                 function_ref<Value(OpBuilder &)> then, Value otherwise);

/// PTX inline assembly (AT&T dialect) with `operands` under `constraints`;
/// its result of type `result` (null: none). Marked as having side effects,
/// so LLVM keeps it in order with barriers and other memory operations.
Value inlinePtx(OpBuilder &b, Location loc, Type result, ValueRange operands,
                StringRef text, StringRef constraints);

/// The accesses below go through a global pointer (addrspace 1) or a
/// generic one (a cluster's shared memory), as PTX ld/st of that space.
/// A load that only touches memory where `mask` holds and gives `other`
/// elsewhere (a predicated PTX ld); a plain load if `mask` is null.
Value loadMasked(OpBuilder &b, Location loc, Type type, Value ptr, Value mask,
                 Value other);
/// A store where `mask` holds (a predicated PTX st; a plain store
/// if `mask` is null).
void storeMasked(OpBuilder &b, Location loc, Value value, Value ptr,
                 Value mask);

/// A load of `words` 32-bit words (an aligned 4, 8 or 16-byte
/// access, ld.global.v4.b32 at most) as vector<words x i32>; where `mask`
/// is given and false, memory is not touched and `other` (of the same type)
/// is the result.
Value loadWords(OpBuilder &b, Location loc, Value ptr, unsigned words,
                Value mask, Value other);
/// A store of a vector<words x i32>, where `mask` holds (if given).
void storeWords(OpBuilder &b, Location loc, Value value, Value ptr, Value mask);

/// Element `index` (i32) of an array of `type` that starts `byteOffset`
/// bytes into the CTA's shared memory.
Value sharedElementPtr(OpBuilder &b, Location loc, Type type,
                       int64_t byteOffset, Value index);
void storeShared(OpBuilder &b, Location loc, Value value, Value ptr);
/// The bits of `values[group]` (16- or 32-bit scalars, whole words of
/// them) as vector<words x i32>.
Value packWords(OpBuilder &b, Location loc, ValueRange values,
                ArrayRef<int64_t> group);
Value loadShared(OpBuilder &b, Location loc, Type type, Value ptr);
/// Stores `value` at `ptr` if `owner` holds (or is null); otherwise to the
/// thread's private discard slot past the `dataBytes` the op uses. Copies
/// of an element thus never race its owner, without a branch or a
/// predicated store per element (ptxas compiles thousands of predicated
/// shared stores very slowly).
void storeOwned(OpBuilder &b, Location loc, Value value, Value ptr, Value owner,
                int64_t dataBytes);
/// Scratch bytes of an op that writes `dataBytes` with storeOwned in a
/// kernel of `numThreads` threads.
int64_t withDiscardSlots(int64_t dataBytes, int64_t numThreads);

/// Moves the values of a tile of `srcType` into the slots of `dstType`
/// through shared memory: each element's owner writes it at its row-major
/// index in `scratchShape` (default: the tile's shape), then each destination
/// slot reads the index `srcIndexOf` gives for its coordinates. Uses
/// getRemapScratchBytes(srcType, scratchShape, threads) bytes of scratch.
Slots remapThroughShared(
    OpBuilder &b, Location loc, ValueRange src, TileType srcType,
    TileType dstType,
    function_ref<Value(OpBuilder &, ArrayRef<Value>)> srcIndexOf,
    ArrayRef<int64_t> scratchShape = {});
/// The scratch shape in which a 2-D `src` is remapped for reads in the
/// layout of `dst` at `offsets` within it: its rows at the pitch where the
/// writes and reads meet the fewest bank conflicts (cheapestPitch); other
/// tiles keep their shape.
SmallVector<int64_t> remapScratchShape(TileType src, TileType dst,
                                       ArrayRef<int64_t> offsets = {});
/// Scratch bytes of remapThroughShared (`scratchShape` empty: the tile's).
int64_t getRemapScratchBytes(TileType src, ArrayRef<int64_t> scratchShape,
                             int64_t numThreads);
int64_t getTileBytes(TileType type);

/// The IR that addresses a tile in shared memory laid out as
/// SharedTileLayout says (the layout of every memdesc, and of the operands
/// a dot stages itself): `rows` rows of `rowElems` elements of `elemBytes`
/// bytes, in column blocks of swizzled 16-byte chunks.
class SwizzledRows {
public:
  SwizzledRows(int64_t rows, int64_t rowElems, int64_t elemBytes = 2)
      : layout(SharedTileLayout::get(rows, rowElems, elemBytes)) {}
  /// `rowShifts`: the rows in another order (a memdesc's `columns`), as the
  /// bit fields of a row index that move: (mask, left shift; negative:
  /// right) pairs whose fields together make the stored row.
  explicit SwizzledRows(SharedTileLayout layout,
                        SmallVector<std::pair<int64_t, int64_t>> rowShifts = {})
      : layout(layout), rowShifts(std::move(rowShifts)) {}
  const SharedTileLayout &getLayout() const { return layout; }
  int64_t numElements() const { return layout.numElements(); }
  /// Element index of (row, col).
  Value index(OpBuilder &b, Location loc, Value row, Value col) const;
  /// Element index of the first element of chunk `chunk` of `row`.
  Value chunkIndex(OpBuilder &b, Location loc, Value row, Value chunk) const;
  /// Pointer to the `elem` at tile coordinates `coords` of the region at
  /// `base` whose rows run along dimension `contiguous`.
  Value elementPtr(OpBuilder &b, Location loc, Value base, Type elem,
                   ArrayRef<Value> coords, unsigned contiguous) const;

private:
  /// The row where logical row `row` is stored.
  Value storedRow(OpBuilder &b, Location loc, Value row) const;

  SharedTileLayout layout;
  SmallVector<std::pair<int64_t, int64_t>> rowShifts;
};

/// Bytes of a shared-memory region of this type.
int64_t getMemDescBytes(MemDescType type);
/// The swizzled rows in which a memdesc holds (each buffer of) its tile.
SwizzledRows getSwizzledRows(MemDescType type);

/// Where a kernel's shared memory goes: the scratch area its ops share from
/// byte 0, then each local_alloc's region (offset in bytes).
struct SharedMemoryLayout {
  int64_t scratchBytes = 0, totalBytes = 0;
  DenseMap<Operation *, int64_t> offsets;
};
SharedMemoryLayout layoutSharedMemory(func::FuncOp kernel);
/// The address of byte `offset` of the kernel's shared memory.
Value sharedAddress(OpBuilder &b, Location loc, int64_t offset);

/// The lowering of an op that owns a region of the kernel's shared memory,
/// placed by layoutSharedMemory: lowerRegion replaces the op given the
/// address where its region starts (an op without one fails to match).
template <typename OpT> struct SharedRegionPattern : OpConversionPattern<OpT> {
  using OpAdaptor = typename OpConversionPattern<OpT>::OpAdaptor;
  SharedRegionPattern(LLVMTypeConverter &converter,
                      const DenseMap<Operation *, int64_t> &offsets)
      : OpConversionPattern<OpT>(converter, &converter.getContext()),
        offsets(offsets) {}

  LogicalResult
  matchAndRewrite(OpT op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const final {
    auto it = offsets.find(op);
    if (it == offsets.end())
      return rewriter.notifyMatchFailure(op, "no place in shared memory");
    lowerRegion(op, sharedAddress(rewriter, op.getLoc(), it->second), rewriter);
    return success();
  }

protected:
  virtual void lowerRegion(OpT op, Value region,
                           ConversionPatternRewriter &rewriter) const = 0;

private:
  const DenseMap<Operation *, int64_t> &offsets;
};
void populateSharedPatterns(LLVMTypeConverter &converter,
                            RewritePatternSet &patterns,
                            const AccessWidths &widths,
                            const DenseMap<Operation *, int64_t> &offsets);

/// Bytes of a dot's shared-memory area: its staged operands and, on tensor
/// cores, its C fragments.
int64_t getDotBytes(DotOp op);
/// Two adjacent 16-bit operand elements as one tensor-core operand register
/// (vector<2xf16> for f16, i32 for bf16: what the mma.sync intrinsics take).
Value mmaOperandRegister(OpBuilder &b, Location loc, Value lo, Value hi,
                         Type elem);
void populateWarpGroupDotPatterns(LLVMTypeConverter &converter,
                                  RewritePatternSet &patterns);
void populateTMAPatterns(LLVMTypeConverter &converter,
                         RewritePatternSet &patterns,
                         const DenseMap<Operation *, int64_t> &offsets);

/// PTX inline assembly that reads and rewrites `tied` in place (each an
/// output "=c" tied to an input, c its register class from its type) and
/// also reads `inputs` under `inputConstraints`: operands $0.. are the tied
/// values, $N.. the inputs after them (N = 2 * tied.size()). Returns the
/// rewritten values: uses of them stay after the instruction, and the
/// values it reads are computed before it.
SmallVector<Value> tiedInlinePtx(OpBuilder &b, Location loc, ValueRange tied,
                                 ValueRange inputs, StringRef text,
                                 ArrayRef<StringRef> inputConstraints);
/// `fence.proxy.async.shared::cta`: this thread's generic-proxy writes to
/// shared memory become visible to the async proxy (wgmma, bulk copies)
/// once a barrier orders them.
void emitAsyncProxyFence(OpBuilder &b, Location loc);

/// Makes `value`, known only to thread 0, known to the whole CTA.
Value broadcastFromThreadZero(OpBuilder &b, Location loc, Value value);

} // namespace mlir::tessel

#endif // TESSEL_CONVERSION_UTILS_H
