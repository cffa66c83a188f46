//===- SharedToLLVM.cpp - Shared-memory buffers and async copies ----------===//
//
// A memdesc lowers to the shared-memory address of its first element. The
// kernel's local_alloc, mbarrier_alloc and shared_buffer regions follow the
// scratch area its ops share (which every op uses from byte 0), each placed
// first-fit among the regions whose lifetimes overlap its own, so the buffers
// of consecutive loops share memory. Async copies are cp.async of each thread's
// runs of the tile (16 bytes bypassing L1, 4 or 8 through it) into the swizzled
// rows of the destination; masked-off runs are zero-filled (a source size of
// 0), and only the owner of a run copies it.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace mlir::tessel;

/// Regions start on a whole period of the widest swizzle (8 rows of 128
/// bytes): the tensor cores and bulk copies apply the swizzle to address
/// bits, so a region must start where the pattern does.
static constexpr int64_t kRegionAlign = 1024;

int64_t mlir::tessel::getMemDescBytes(MemDescType type) {
  int64_t buffers = type.getShape().size() == 3 ? type.getShape()[0] : 1;
  return buffers * getSwizzledRows(type).numElements() *
         getSharedBytes(type.getElementType());
}

SwizzledRows mlir::tessel::getSwizzledRows(MemDescType type) {
  auto mma = dyn_cast_if_present<MmaEncodingAttr>(type.getColumns());
  if (!mma)
    return SwizzledRows(type.getSharedLayout());
  // The verifier saw the order exist; it moves whole bit fields of the row
  // index (the warpgroup's, the lane's and the block's), one pair each.
  SmallVector<int64_t> rows =
      *getWarpGroupColumnRows(mma, type.getTileShape()[1]);
  std::map<int64_t, int64_t> fields; // shift -> mask
  for (int64_t bit = 0; (int64_t(1) << bit) < int64_t(rows.size()); ++bit) {
    int64_t to = llvm::Log2_64(rows[int64_t(1) << bit]);
    fields[to - bit] |= int64_t(1) << bit;
  }
  SmallVector<std::pair<int64_t, int64_t>> shifts;
  for (auto [shift, mask] : fields)
    shifts.push_back({mask, shift});
  return SwizzledRows(type.getSharedLayout(), std::move(shifts));
}

SharedMemoryLayout mlir::tessel::layoutSharedMemory(func::FuncOp kernel) {
  SharedMemoryLayout layout;
  // Ops numbered in pre-order; `last` is the highest number in an op's
  // subtree, so [number, last] spans everything nested in it.
  DenseMap<Operation *, std::pair<int64_t, int64_t>> span;
  int64_t next = 0;
  std::function<void(Operation *)> number = [&](Operation *op) {
    int64_t first = next++;
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &nested : block)
          number(&nested);
    span[op] = {first, next - 1};
  };
  for (Operation &op : kernel.getBody().front())
    number(&op);
  kernel.getBody().walk([&](Operation *op) {
    layout.scratchBytes = std::max(layout.scratchBytes, getScratchBytes(op));
  });

  struct Placed {
    int64_t begin, end, offset, bytes;
  };
  SmallVector<Placed> placed;
  layout.totalBytes = layout.scratchBytes;
  // A producer's buffers are the consumers' buffers of the same number
  // (tessel.warp_specialize): placed with them below.
  SmallVector<LocalAllocOp> twins;
  DenseMap<int64_t, int64_t> numbered;
  auto bufferNumber = [](Operation *alloc) -> std::optional<int64_t> {
    if (auto id = alloc->getAttrOfType<IntegerAttr>(
            WarpSpecializeOp::getBufferAttrName()))
      return id.getInt();
    return std::nullopt;
  };
  kernel.getBody().walk([&](Operation *alloc) {
    if (!isa<LocalAllocOp, MBarrierAllocOp, SharedBufferOp>(alloc))
      return;
    if (auto ws = alloc->getParentOfType<WarpSpecializeOp>();
        ws && ws.getProducer().isAncestor(alloc->getParentRegion())) {
      twins.push_back(cast<LocalAllocOp>(alloc));
      return;
    }
    // Live until the last use of the region or of a view of it, counted at
    // that use's ancestor in the allocation's block; a warpgroup dot reads
    // its operands until the wait for its product.
    Block *block = alloc->getBlock();
    int64_t begin = span[alloc].first, end = begin;
    // Barriers never share memory: an mbarrier may not be initialised
    // again, nor its bytes used for anything else, while it is valid. Nor
    // do shared buffers: other CTAs of the cluster write them whenever.
    if (isa<MBarrierAllocOp, SharedBufferOp>(alloc)) {
      begin = 0;
      end = next;
    }
    SmallVector<Value> views = {alloc->getResult(0)};
    while (!views.empty()) {
      Value v = views.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (getViewedMemDesc(user))
          views.push_back(user->getResult(0));
        SmallVector<Operation *> readers = {user};
        if (isa<WarpGroupDotOp>(user))
          llvm::append_range(readers, user->getUsers());
        for (Operation *reader : readers)
          if (Operation *at = block->findAncestorOpInBlock(*reader))
            end = std::max(end, span[at].second);
      }
    }
    int64_t bytes, align = kRegionAlign;
    if (auto barriers =
            dyn_cast<MBarriersType>(alloc->getResult(0).getType())) {
      bytes = 8 * barriers.getCount();
      align = 8;
    } else if (auto buffer = dyn_cast<SharedBufferOp>(alloc)) {
      bytes = buffer.getElements() *
              getSharedBytes(buffer.getType().getPointeeType());
      align = 16;
    } else {
      bytes = getMemDescBytes(cast<MemDescType>(alloc->getResult(0).getType()));
    }
    // First fit among the regions live at the same time.
    int64_t offset = llvm::alignTo(layout.scratchBytes, align);
    bool moved = true;
    while (moved) {
      moved = false;
      for (const Placed &p : placed)
        if (p.begin <= end && begin <= p.end && offset < p.offset + p.bytes &&
            p.offset < offset + bytes) {
          offset = llvm::alignTo(p.offset + p.bytes, align);
          moved = true;
        }
    }
    placed.push_back({begin, end, offset, bytes});
    layout.offsets[alloc] = offset;
    layout.totalBytes = std::max(layout.totalBytes, offset + bytes);
    if (std::optional<int64_t> id = bufferNumber(alloc))
      numbered[*id] = offset;
  });
  for (LocalAllocOp twin : twins)
    layout.offsets[twin] = numbered.at(*bufferNumber(twin));
  return layout;
}

Value mlir::tessel::sharedAddress(OpBuilder &b, Location loc, int64_t offset) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Value smem =
      LLVM::AddressOfOp::create(b, loc, ptrType, kSharedMemorySymbol.str());
  return LLVM::GEPOp::create(b, loc, ptrType, b.getI8Type(), smem,
                             ArrayRef<LLVM::GEPArg>{int32_t(offset)});
}

namespace {

/// `ptr` advanced by `bytes` (an i32 value).
Value advance(OpBuilder &b, Location loc, Value ptr, Value bytes) {
  return LLVM::GEPOp::create(b, loc, ptr.getType(), b.getI8Type(), ptr,
                             ValueRange{bytes});
}

struct LocalAllocLowering : SharedRegionPattern<LocalAllocOp> {
  using SharedRegionPattern::SharedRegionPattern;
  void lowerRegion(LocalAllocOp op, Value region,
                   ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, region);
  }
};

/// The region's generic address (see the PtrType conversion).
struct SharedBufferLowering : SharedRegionPattern<SharedBufferOp> {
  using SharedRegionPattern::SharedRegionPattern;
  void lowerRegion(SharedBufferOp op, Value region,
                   ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVM::AddrSpaceCastOp>(
        op, LLVM::LLVMPointerType::get(getContext()), region);
  }
};

struct ClusterMapLowering : OpConversionPattern<ClusterMapOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClusterMapOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::MapaOp>(
        op, adaptor.getPtr().getType(), adaptor.getPtr(), adaptor.getRank());
    return success();
  }
};

/// Every thread takes part (.aligned: the CTA's threads reach it together).
struct ClusterArriveLowering : OpConversionPattern<ClusterArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClusterArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    UnitAttr aligned = rewriter.getUnitAttr();
    if (op.getRelaxed())
      rewriter.replaceOpWithNewOp<NVVM::ClusterArriveRelaxedOp>(op, aligned);
    else
      rewriter.replaceOpWithNewOp<NVVM::ClusterArriveOp>(op, aligned);
    return success();
  }
};

struct ClusterWaitLowering : OpConversionPattern<ClusterWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClusterWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::ClusterWaitOp>(op,
                                                     rewriter.getUnitAttr());
    return success();
  }
};

struct MemDescIndexLowering : OpConversionPattern<MemDescIndexOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MemDescIndexOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bytes = arith::MulIOp::create(
        rewriter, loc, adaptor.getIndex(),
        i32Constant(rewriter, loc,
                    getMemDescBytes(cast<MemDescType>(op.getType()))));
    rewriter.replaceOp(op, advance(rewriter, loc, adaptor.getSrc(), bytes));
    return success();
  }
};

/// The tile's address advanced by `offset` rows (one column block: rows are
/// its width apart, unswizzled; the tensor cores swizzle by address bits).
struct MemDescRowsLowering : OpConversionPattern<MemDescRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MemDescRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SharedTileLayout layout =
        cast<MemDescType>(op.getSrc().getType()).getSharedLayout();
    Value bytes =
        i32Constant(rewriter, loc, op.getOffset() * layout.getBlockBytes());
    rewriter.replaceOp(op, advance(rewriter, loc, adaptor.getSrc(), bytes));
    return success();
  }
};

/// The same bytes, described the other way round.
struct MemDescTransLowering : OpConversionPattern<MemDescTransOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MemDescTransOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSrc());
    return success();
  }
};

struct AsyncCopyLowering : VectorisedPattern<AsyncCopyOp> {
  using VectorisedPattern::VectorisedPattern;

  LogicalResult
  matchAndRewrite(AsyncCopyOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto ptrType = cast<TileType>(op.getPtr().getType());
    auto dstType = cast<MemDescType>(op.getDst().getType());
    Type elem = dstType.getElementType();
    int64_t elemBytes = getSharedBytes(elem);
    TileLayout layout = getLayout(ptrType);
    ThreadLayout thread(rewriter, loc, layout);
    SwizzledRows rows = getSwizzledRows(dstType);
    unsigned contiguous = dstType.getContiguousDim();
    Value dst = llvm::getSingleElement(adaptor.getDst());
    ValueRange ptrs = adaptor.getPtr(), mask = adaptor.getMask();
    // Runs along the destination's rows only.
    int64_t width = std::min(widthOf(op), rows.getLayout().getAccessElems());
    if (layout.getDim(contiguous).perThread % width != 0)
      width = 1;
    int64_t bytes = width * elemBytes;
    for (ArrayRef<int64_t> group : accessGroups(ptrType, contiguous, width)) {
      int64_t first = group.front();
      Value to = rows.elementPtr(rewriter, loc, dst, elem, thread.coords(first),
                                 contiguous);
      Value owner = thread.isOwner(first);
      Value pred = mask.empty() ? Value() : mask[first];
      if (bytes >= 4)
        copyAsync(rewriter, loc, to, ptrs[first], bytes, owner, pred);
      else // too narrow for cp.async: through a register, now
        emitIf(rewriter, loc, owner, [&](OpBuilder &b) {
          Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elem));
          storeShared(b, loc,
                      loadMasked(b, loc, elem, ptrs[first], pred,
                                 pred ? zero : Value()),
                      to);
        });
    }
    rewriter.eraseOp(op);
    return success();
  }

  /// cp.async of `bytes` bytes, where `owner` holds; zeros where `mask`
  /// does not.
  static void copyAsync(OpBuilder &b, Location loc, Value to, Value from,
                        int64_t bytes, Value owner, Value mask) {
    Value size = i32Constant(b, loc, bytes);
    Value srcSize = mask ? arith::SelectOp::create(b, loc, mask, size,
                                                   i32Constant(b, loc, 0))
                               .getResult()
                         : size;
    // .cg (L2 only) takes 16 bytes; smaller copies go through L1 (.ca).
    std::string text =
        llvm::formatv("{0}cp.async.{1}.shared.global [ $0 ], [ $1 ], {2}, $2;",
                      owner ? "@$3 " : "", bytes == 16 ? "cg" : "ca", bytes);
    SmallVector<Value> operands = {to, from, srcSize};
    std::string constraints = "r,l,r";
    if (owner) {
      operands.push_back(owner);
      constraints += ",b";
    }
    inlinePtx(b, loc, Type(), operands, text, constraints);
  }
};

/// Each element by its owner, between barriers (earlier readers of the
/// region are done, unless known done; every thread then sees the tile); a
/// thread's runs along the buffer's contiguous dimension as one access each.
struct LocalStoreLowering : OpConversionPattern<LocalStoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LocalStoreOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = cast<TileType>(op.getSrc().getType());
    auto dstType = cast<MemDescType>(op.getDst().getType());
    SwizzledRows rows = getSwizzledRows(dstType);
    unsigned contiguous = dstType.getContiguousDim();
    Value dst = llvm::getSingleElement(adaptor.getDst());
    ValueRange values = adaptor.getSrc();
    Type elem = values.front().getType();
    // A swizzle moves whole 16-byte chunks: an aligned run stays together
    // (padded rows: as far as their alignment allows).
    int64_t width = runWidth(srcType, contiguous,
                             srcType.getElementType().getIntOrFloatBitWidth(),
                             rows.getLayout().getAccessElems());
    if (!op.getReadersDone())
      emitBarrier(rewriter, loc);
    ThreadLayout thread(rewriter, loc, getLayout(srcType));
    // A run is owned as a whole (its copies are whole runs too).
    for (ArrayRef<int64_t> group : accessGroups(srcType, contiguous, width)) {
      Value ptr = rows.elementPtr(rewriter, loc, dst, elem,
                                  thread.coords(group.front()), contiguous);
      emitIf(rewriter, loc, thread.isOwner(group.front()), [&](OpBuilder &b) {
        if (width == 1)
          return storeShared(b, loc, values[group.front()], ptr);
        LLVM::StoreOp::create(b, loc, packWords(b, loc, values, group), ptr,
                              /*alignment=*/width * getSharedBytes(elem));
      });
    }
    // The warpgroup MMA reads shared memory through the async proxy.
    if (hasWarpGroupMma(op))
      emitAsyncProxyFence(rewriter, loc);
    emitBarrier(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct LocalLoadLowering : OpConversionPattern<LocalLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LocalLoadOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto srcType = cast<MemDescType>(op.getSrc().getType());
    auto type = cast<TileType>(op.getType());
    SwizzledRows rows = getSwizzledRows(srcType);
    unsigned contiguous = srcType.getContiguousDim();
    Value src = llvm::getSingleElement(adaptor.getSrc());
    Type elem = getTypeConverter()->convertType(type.getElementType());
    TileLayout layout = getLayout(type);
    ThreadLayout thread(rewriter, loc, layout);
    SmallVector<OpFoldResult> origin =
        sliceOrigin(rewriter, loc, op.getStaticOffsets(), adaptor.getOffsets(),
                    type.getShape(), srcType.getShape());
    Slots result;
    for (int64_t slot = 0, e = layout.getNumSlots(); slot < e; ++slot) {
      SmallVector<Value> at = thread.coords(slot);
      for (auto [c, offset] : llvm::zip(at, origin))
        c = addOffset(rewriter, loc, c, offset);
      result.push_back(loadShared(
          rewriter, loc, elem,
          rows.elementPtr(rewriter, loc, src, elem, at, contiguous)));
    }
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

struct AsyncCommitLowering : OpConversionPattern<AsyncCommitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AsyncCommitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<NVVM::CpAsyncCommitGroupOp>(op);
    return success();
  }
};

struct AsyncWaitLowering : OpConversionPattern<AsyncWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AsyncWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NVVM::CpAsyncWaitGroupOp::create(rewriter, loc, op.getPending());
    // cp.async writes through the generic proxy; the warpgroup MMA reads
    // through the async one.
    if (hasWarpGroupMma(op) && !op.getThreadReaders())
      emitAsyncProxyFence(rewriter, loc);
    emitBarrier(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::tessel::populateSharedPatterns(
    LLVMTypeConverter &converter, RewritePatternSet &patterns,
    const AccessWidths &widths, const DenseMap<Operation *, int64_t> &offsets) {
  patterns.add<LocalAllocLowering, SharedBufferLowering>(converter, offsets);
  patterns.add<AsyncCopyLowering>(converter, widths);
  patterns.add<MemDescIndexLowering, MemDescRowsLowering, MemDescTransLowering,
               LocalStoreLowering, LocalLoadLowering, AsyncCommitLowering,
               AsyncWaitLowering, ClusterMapLowering, ClusterArriveLowering,
               ClusterWaitLowering>(converter, patterns.getContext());
}
