//===- WarpGroupDotToLLVM.cpp - Hopper warpgroup MMA (wgmma) --------------===//
//
// tessel.warpgroup_dot: every warpgroup issues, for each of its 64-row
// slices of the result and each 16-wide step of K, one
//   wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T {d}, {a}, descB, ...
// with A from registers (the per-warp mma.sync A fragments are wgmma's), or
//   wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T {d}, descA, descB, ...
// with A in shared memory too (K-major, or M-major through the transpose
// bit). The tensor cores read a shared operand
// through a 64-bit matrix descriptor: start address, the byte offsets
// between 8-row groups (SBO) and between column blocks (LBO), and the
// swizzle mode of the memdesc's SharedTileLayout. A `wgmma.fence` that
// takes every accumulator and A register in and out precedes the group, so
// nothing that writes them can sink below it; `wgmma.commit_group` closes
// it. tessel.warpgroup_dot_wait is a `wgmma.wait_group` through which the
// accumulators pass, so no read of them can rise above it, and which reads
// the A registers it keeps, so no value computed before it shares them.
// A dot whose accumulator is zero (a splat of +0.0: a product that adds onto
// nothing) starts each slice with scale-d = 0 (D = A·B) and ties no values
// into its accumulator registers: zeros copied into them cost an instruction
// per register, and ptxas, finding one zero register copied into the
// accumulators of two chains in flight, waited for the first chain before
// issuing the second (C7517, StreamKL's forward).
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The matrix descriptor of a shared operand, B (K x N) or A (M x K), and
/// the byte offsets of its steps of K and of its rows of M from its start.
struct OperandDescriptor {
  MemDescType type;
  SharedTileLayout layout;
  /// The operand's contiguous dimension is K (wgmma's default) rather than
  /// M or N (the transpose bit).
  bool kMajor;
  /// Groups of 8 rows from one that an instruction reads to the next (a
  /// K-major B shared by warpgroups side by side along N: one each in turn).
  int64_t groupStride;

  OperandDescriptor(MemDescType type, unsigned kDim, int64_t groupStride = 1)
      : type(type), layout(type.getSharedLayout()),
        kMajor(type.getContiguousDim() == kDim), groupStride(groupStride) {
    assert((groupStride == 1 || kMajor) && "strided groups are K-major");
  }

  /// The descriptor's constant fields: swizzle mode (bits 62-63: 1 = 128,
  /// 2 = 64, 3 = 32 bytes), stride byte offset (bits 32-45) and leading
  /// byte offset (bits 16-29), both in units of 16 bytes.
  uint64_t constantBits() const {
    int64_t swizzle = layout.getNvmmaSwizzleBytes();
    uint64_t mode = swizzle == 128 ? 1 : swizzle == 64 ? 2 : 3;
    // SBO: from one group of 8 rows (of one column block) to the next read.
    uint64_t sbo = 8 * layout.getBlockBytes() * groupStride;
    // LBO: with N contiguous, from one column block of N to the next; with
    // K contiguous a step of K never leaves its block and the field is not
    // read (1 by convention).
    uint64_t lbo = kMajor ? 16 : layout.getBlockStrideBytes();
    return mode << 62 | (sbo >> 4) << 32 | (lbo >> 4) << 16;
  }

  /// Bytes from the operand's first element to the first of K step `step`.
  int64_t stepOffset(int64_t step) const {
    int64_t k0 = 16 * step;
    if (!kMajor) // 16 rows of every block
      return k0 * layout.getBlockBytes();
    return k0 / layout.blockElems * layout.getBlockStrideBytes() +
           k0 % layout.blockElems * layout.elemBytes;
  }

  /// Bytes from the operand's first row (of M or N) to row `row`: K-major,
  /// whole groups of 8 rows, SBO apart; MN-major, whole column blocks.
  int64_t rowOffset(int64_t row) const {
    if (!kMajor) {
      assert(row % layout.blockElems == 0 && "rows start whole blocks");
      return row / layout.blockElems * layout.getBlockStrideBytes();
    }
    assert(row % 8 == 0 && "rows start whole swizzle periods");
    return row * layout.getBlockBytes();
  }
};

/// The descriptor, with the constant fields of `desc`, of an operand that
/// starts at the i64 shared-memory address `address`.
static Value descriptorAt(OpBuilder &b, Location loc, Value address,
                          const OperandDescriptor &desc) {
  // Start address field (bits 0-13): the 18-bit shared address / 16.
  Value start = LLVM::LShrOp::create(
      b, loc,
      LLVM::AndOp::create(
          b, loc, address,
          LLVM::ConstantOp::create(b, loc, b.getI64IntegerAttr(0x3ffff))),
      LLVM::ConstantOp::create(b, loc, b.getI64IntegerAttr(4)));
  return LLVM::OrOp::create(
      b, loc, start,
      LLVM::ConstantOp::create(
          b, loc, b.getI64IntegerAttr(int64_t(desc.constantBits()))));
}

/// `desc` moved `bytes` (a multiple of 16) further: the start address field
/// does not overflow, as shared memory ends below 2^18 bytes.
static Value advanceDescriptor(OpBuilder &b, Location loc, Value desc,
                               int64_t bytes) {
  return LLVM::AddOp::create(
      b, loc, desc,
      LLVM::ConstantOp::create(b, loc, b.getI64IntegerAttr(bytes >> 4)));
}

/// The running thread's warp index read from lane 0, so that ptxas sees it
/// uniform across the warp (and keeps what derives from it, the operand
/// descriptors, in uniform registers). One shuffle at the kernel's entry:
/// LLVM does not move a shuffle out of a loop, where its latency would come
/// before the loop's first wgmma in every iteration.
static Value uniformWarpIndex(OpBuilder &b, Location loc) {
  Operation *parent = b.getInsertionBlock()->getParentOp();
  auto kernel = dyn_cast<FunctionOpInterface>(parent);
  if (!kernel)
    kernel = parent->getParentOfType<FunctionOpInterface>();
  Block &entry = kernel.getFunctionBody().front();
  // tid >> 5 read from lane 0, its shift maybe already lowered to LLVM's.
  auto isWarpIndex = [](NVVM::ShflOp shfl) {
    Operation *shift = shfl.getVal().getDefiningOp();
    APInt by;
    return shfl.getKind() == NVVM::ShflKind::idx &&
           matchPattern(shfl.getOffset(), m_Zero()) &&
           isa_and_nonnull<arith::ShRUIOp, LLVM::LShrOp>(shift) &&
           shift->getOperand(0).getDefiningOp<NVVM::ThreadIdXOp>() &&
           matchPattern(shift->getOperand(1), m_ConstantInt(&by)) && by == 5;
  };
  for (auto shfl : entry.getOps<NVVM::ShflOp>())
    if (isWarpIndex(shfl))
      return shfl.getRes();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&entry);
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  Value warp = arith::ShRUIOp::create(b, loc, tid, i32Constant(b, loc, 5));
  return NVVM::ShflOp::create(b, loc, b.getI32Type(), i32Constant(b, loc, -1),
                              warp, i32Constant(b, loc, 0),
                              i32Constant(b, loc, 0x1f), NVVM::ShflKind::idx,
                              UnitAttr());
}

/// The running thread's warpgroup along dimension `dim` of the
/// accumulator (4 warps of 16 rows make one along M) times `bytes`, as an
/// i64: how far its operand starts from the warpgroup 0's.
static Value warpGroupOffset(OpBuilder &b, Location loc,
                             const TileLayout &accLayout, unsigned dim,
                             int64_t bytes) {
  // Read where the dot is (a copy LLVM cannot hoist): what derives from it
  // stays there too instead of living through the loop in registers.
  Value warp = inlinePtx(b, loc, b.getI32Type(), uniformWarpIndex(b, loc),
                         "mov.b32 $0, $1;", "=r,r");
  Value warpGroup = warpIndexAlong(b, loc, accLayout.getDim(dim), warp);
  if (dim == 0)
    warpGroup =
        arith::ShRUIOp::create(b, loc, warpGroup, i32Constant(b, loc, 2));
  Value offset =
      arith::MulIOp::create(b, loc, warpGroup, i32Constant(b, loc, bytes));
  return arith::ExtUIOp::create(b, loc, b.getI64Type(), offset);
}

/// The PTX type name of a 16-bit operand element.
static StringRef ptxType(Type elem) { return elem.isF16() ? "f16" : "bf16"; }

/// One wgmma of the 64 x `n` slice whose accumulators are `acc` (n / 2 per
/// thread), A as 4 registers or one descriptor (`a`) and B's descriptor
/// `descB`; without `accumulate` (scale-d = 0) D = A·B, whatever `acc` holds.
static SmallVector<Value> emitWgmma(OpBuilder &b, Location loc, ValueRange acc,
                                    ValueRange a, Value descB, Type elem,
                                    int64_t n, bool transA, bool transB,
                                    bool accumulate) {
  int64_t count = acc.size();
  bool aShared = a.size() == 1;
  auto input = [&](int64_t i) { return "$" + std::to_string(2 * count + i); };
  SmallVector<std::string> d, aOperands;
  for (int64_t i = 0; i < count; ++i)
    d.push_back("$" + std::to_string(i));
  for (int64_t i = 0, e = a.size(); i < e; ++i)
    aOperands.push_back(input(i));
  std::string aText =
      aShared ? aOperands.front() : "{" + llvm::join(aOperands, ", ") + "}";
  int64_t next = a.size();
  // p: the scale-d predicate (accumulate into D). Only a shared A has a
  // transpose bit (imm-trans-a).
  std::string text = llvm::formatv(
      "{{\n\t.reg .pred p;\n\tsetp.ne.b32 p, {0}, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} {{{3}}, "
      "{4}, {5}, p, 1, 1, {6}{7};\n\t}",
      input(next + 1), n, ptxType(elem), llvm::join(d, ", "), aText,
      input(next), aShared ? (transA ? "1, " : "0, ") : "", transB ? 1 : 0);
  SmallVector<Value> inputs(a);
  inputs.push_back(descB);
  inputs.push_back(i32Constant(b, loc, accumulate ? 1 : 0));
  SmallVector<StringRef> constraints(a.size(), aShared ? "l" : "r");
  constraints.append({"l", "r"});
  return tiedInlinePtx(b, loc, acc, inputs, text, constraints);
}

/// A's registers per (slice, step), 4 each: a0a1 (row g, K 2t), a2a3
/// (g + 8, 2t), a4a5 (g, 2t + 8), a6a7 (g + 8, 2t + 8), as 32-bit registers;
/// a slice is one of the thread's 16-row blocks (one per 64-row slice of its
/// warpgroup), a step 16 of K.
static SmallVector<Value> registersA(OpBuilder &b, Location loc, TileType aType,
                                     ValueRange aSlots) {
  TileLayout aLayout = getLayout(aType);
  Type elem = aType.getElementType();
  int64_t slices = aLayout.getDim(0).numLocal() / 2;
  int64_t steps = aType.getShape()[1] / 16;
  SmallVector<Value> regs;
  for (int64_t i = 0; i < slices; ++i)
    for (int64_t s = 0; s < steps; ++s)
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t r = 0; r < 2; ++r) {
          int64_t c = 4 * s + 2 * half;
          Value pair = mmaOperandRegister(
              b, loc, aSlots[aLayout.getSlot({2 * i + r, c})],
              aSlots[aLayout.getSlot({2 * i + r, c + 1})], elem);
          if (pair.getType() != b.getI32Type())
            pair = LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair);
          regs.push_back(pair);
        }
  return regs;
}

/// Whether every element of `acc` is +0.0.
static bool isZeroAccumulator(Value acc) {
  auto splat = acc.getDefiningOp<SplatOp>();
  FloatAttr value;
  return splat && matchPattern(splat.getSrc(), m_Constant(&value)) &&
         value.getValue().isPosZero();
}

struct WarpGroupDotLowering : OpConversionPattern<WarpGroupDotOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WarpGroupDotOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto bType = cast<MemDescType>(op.getB().getType());
    auto aShared = dyn_cast<MemDescType>(op.getA().getType());
    TileLayout accLayout = getLayout(op.getType());
    Type elem = bType.getElementType();
    // Warpgroups side by side along N each take every wn-th 8-column block.
    int64_t wn = accLayout.getDim(1).warps;
    int64_t n = bType.getShape()[1] / wn;
    int64_t steps = bType.getShape()[0] / 16;
    // The thread's 16-row blocks: one per 64-row slice of its warpgroup.
    int64_t slices = accLayout.getDim(0).numLocal() / 2;
    int64_t blocksN = n / 8;

    SmallVector<Value> aRegs;
    if (!aShared)
      aRegs = registersA(b, loc, cast<TileType>(op.getA().getType()),
                         adaptor.getA());
    // Accumulator slots of each slice in wgmma's order: d[4j + 2r + e] is
    // row g + 8r, column 8j + 2t + e.
    SmallVector<int64_t> accSlots;
    for (int64_t i = 0; i < slices; ++i)
      for (int64_t j = 0; j < blocksN; ++j)
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t e = 0; e < 2; ++e)
            accSlots.push_back(accLayout.getSlot({2 * i + r, 2 * j + e}));

    // Every register the group reads passes through the fence; a zero
    // accumulator is not read (see the header).
    bool zeroAcc = isZeroAccumulator(op.getAcc());
    Value unread;
    if (zeroAcc)
      unread =
          LLVM::UndefOp::create(b, loc, adaptor.getAcc().front().getType());
    SmallVector<Value> fenced;
    for (int64_t slot : accSlots)
      fenced.push_back(zeroAcc ? unread : adaptor.getAcc()[slot]);
    llvm::append_range(fenced, aRegs);
    fenced = tiedInlinePtx(b, loc, fenced, {}, "wgmma.fence.sync.aligned;", {});
    MutableArrayRef<Value> acc(fenced.data(), accSlots.size());
    ArrayRef<Value> aFenced = ArrayRef(fenced).drop_front(accSlots.size());

    auto addressOf = [&](ValueRange memdesc) -> Value {
      return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(),
                                      llvm::getSingleElement(memdesc));
    };
    OperandDescriptor descB(bType, /*kDim=*/0, /*groupStride=*/wn);
    Value addressB = addressOf(adaptor.getB());
    if (wn > 1)
      addressB = LLVM::AddOp::create(
          b, loc, addressB,
          warpGroupOffset(b, loc, accLayout, 1, descB.rowOffset(8)));
    Value baseB = descriptorAt(b, loc, addressB, descB);
    // A shared A: the descriptor of the warpgroup's first row; its slices
    // lie a band of the accumulator's rows apart.
    std::optional<OperandDescriptor> descA;
    Value baseA;
    int64_t band = accLayout.getDim(0).warps * accLayout.getDim(0).warpStep();
    if (aShared) {
      descA.emplace(aShared, /*kDim=*/1);
      // In sequence: the IR's order must not depend on the C++ compiler's
      // order of evaluating arguments.
      Value rowOffset =
          warpGroupOffset(b, loc, accLayout, 0,
                          descA->rowOffset(4 * accLayout.getDim(0).warpStep()));
      Value address =
          LLVM::AddOp::create(b, loc, addressOf(adaptor.getA()), rowOffset);
      baseA = descriptorAt(b, loc, address, *descA);
    }
    int64_t perSlice = blocksN * 4;
    for (int64_t i = 0; i < slices; ++i) {
      MutableArrayRef<Value> sliceAcc = acc.slice(i * perSlice, perSlice);
      for (int64_t s = 0; s < steps; ++s) {
        Value stepB = advanceDescriptor(b, loc, baseB, descB.stepOffset(s));
        SmallVector<Value> a;
        if (descA)
          a.push_back(advanceDescriptor(b, loc, baseA,
                                        descA->rowOffset(i * band) +
                                            descA->stepOffset(s)));
        else
          llvm::append_range(a, aFenced.slice((i * steps + s) * 4, 4));
        SmallVector<Value> out =
            emitWgmma(b, loc, sliceAcc, a, stepB, elem, n,
                      descA && !descA->kMajor, !descB.kMajor,
                      /*accumulate=*/s > 0 || !zeroAcc);
        llvm::copy(out, sliceAcc.begin());
      }
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);

    Slots result(adaptor.getAcc().begin(), adaptor.getAcc().end());
    for (auto [slot, value] : llvm::zip(accSlots, acc))
      result[slot] = value;
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

struct WarpGroupDotWaitLowering : OpConversionPattern<WarpGroupDotWaitOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WarpGroupDotWaitOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> values;
    for (ValueRange tile : adaptor.getInputs())
      llvm::append_range(values, tile);
    // The registers the dots read as A, packed as the dots pack them, are
    // operands too: live until here.
    SmallVector<Value> kept;
    for (auto [read, tile] : llvm::zip(op.getReads(), adaptor.getReads()))
      llvm::append_range(kept,
                         registersA(rewriter, op.getLoc(),
                                    cast<TileType>(read.getType()), tile));
    std::string text =
        llvm::formatv("wgmma.wait_group.sync.aligned {0};", op.getPendings());
    SmallVector<Value> waited =
        tiedInlinePtx(rewriter, op.getLoc(), values, kept, text,
                      SmallVector<StringRef>(kept.size(), "r"));
    SmallVector<SmallVector<Value>> results;
    ArrayRef<Value> rest = waited;
    for (ValueRange tile : adaptor.getInputs()) {
      results.emplace_back(rest.take_front(tile.size()));
      rest = rest.drop_front(tile.size());
    }
    SmallVector<ValueRange> ranges(results.begin(), results.end());
    rewriter.replaceOpWithMultiple(op, ranges);
    return success();
  }
};

} // namespace

void mlir::tessel::populateWarpGroupDotPatterns(LLVMTypeConverter &converter,
                                                RewritePatternSet &patterns) {
  patterns.add<WarpGroupDotLowering, WarpGroupDotWaitLowering>(
      converter, patterns.getContext());
}
