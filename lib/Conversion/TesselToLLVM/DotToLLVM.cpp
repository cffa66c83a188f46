//===- DotToLLVM.cpp - Matrix products on tensor and CUDA cores -----------===//
//
// Tensor cores: f16/bf16 operands with the accumulator in #tessel.mma and A
// in the matching #tessel.dot_operand (tessel-assign-layouts arranges it).
// A and the accumulator stay in registers. B is read from shared memory:
// from its memdesc where tessel-pipeline put it there, else staged by the
// dot, as rows of 16-byte chunks, XOR-swizzled so that the eight rows one
// ldmatrix reads fall in different banks. Per step of K each warp loads its
// B fragments with ldmatrix (.trans when the rows run along K) and issues
// its mma.sync m16n8k16. Padding to the MMA shape is zero in B and in A, so
// it adds nothing, even to infinite or NaN elements elsewhere.
//
// Other dots take the CUDA cores: both operands go to shared memory,
// row-major, and each thread accumulates its slots with f32 FMAs over K.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

/// The mma.sync shape.
static constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16;

/// The #tessel.mma encoding of a tensor-core dot, null for a CUDA-core one.
static MmaEncodingAttr getMmaEncoding(DotOp op) {
  auto a = cast<TileType>(op.getA().getType());
  if (!a.getElementType().isF16() && !a.getElementType().isBF16())
    return {};
  auto mma = dyn_cast_if_present<MmaEncodingAttr>(
      cast<TileType>(op.getType()).getEncoding());
  auto operand = dyn_cast_if_present<DotOperandEncodingAttr>(a.getEncoding());
  if (!mma || !operand || operand.getOpIdx() != 0 || operand.getParent() != mma)
    return {};
  return mma;
}

/// Index of (row, col) in a row-major array with rows of `stride` elements.
static Value rowMajor(OpBuilder &b, Location loc, Value row, Value col,
                      int64_t stride) {
  Value scaled =
      arith::MulIOp::create(b, loc, row, i32Constant(b, loc, stride));
  return arith::AddIOp::create(b, loc, scaled, col);
}

static Value addConstant(OpBuilder &b, Location loc, Value v, int64_t c) {
  if (c == 0)
    return v;
  return arith::AddIOp::create(b, loc, v, i32Constant(b, loc, c));
}

using IndexFn = function_ref<Value(OpBuilder &, Value row, Value col)>;

/// Zeros `rows` x `cols` elements of `type` from (row0, col0) of an array
/// whose element (row, col) is at `indexOf(row, col)`, spread over the
/// CTA's threads.
static void zeroFill(OpBuilder &b, Location loc, Type type, int64_t byteOffset,
                     int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                     int64_t numThreads, IndexFn indexOf) {
  if (rows <= 0 || cols <= 0)
    return;
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  Value count = i32Constant(b, loc, rows * cols);
  Value step = i32Constant(b, loc, numThreads);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  scf::ForOp::create(b, loc, tid, count, step, ValueRange{},
                     [&](OpBuilder &b, Location loc, Value i, ValueRange) {
                       Value width = i32Constant(b, loc, cols);
                       Value row = arith::DivUIOp::create(b, loc, i, width);
                       Value col = arith::RemUIOp::create(b, loc, i, width);
                       Value index = indexOf(b, addConstant(b, loc, row, row0),
                                             addConstant(b, loc, col, col0));
                       storeShared(
                           b, loc, zero,
                           sharedElementPtr(b, loc, type, byteOffset, index));
                       scf::YieldOp::create(b, loc);
                     });
}

/// A float as the integer of its bits (integers stay).
static Value bitsOf(OpBuilder &b, Location loc, Value v) {
  Type type = v.getType();
  if (!isa<FloatType>(type))
    return v;
  return LLVM::BitcastOp::create(
      b, loc, b.getIntegerType(type.getIntOrFloatBitWidth()), v);
}

/// Writes the elements of a tile (each by its owner) to shared memory at
/// `indexOf(coords)`; runs of `vector` slots contiguous along `dim` go as
/// one access.
static void stageTile(OpBuilder &b, Location loc, ValueRange values,
                      TileType type, int64_t byteOffset, int64_t dataBytes,
                      unsigned dim, int64_t vector, IndexFn indexOf) {
  TileLayout layout = getLayout(type);
  ThreadLayout thread(b, loc, layout);
  Type elem = values.front().getType();
  for (int64_t slot = 0, e = values.size(); slot < e; ++slot) {
    SmallVector<int64_t> local = layout.getLocalIndices(slot);
    if (local[dim] % vector != 0)
      continue;
    Value data = values[slot];
    if (vector > 1) {
      // As integers: hosts without bf16 arithmetic (the CPU emulation of
      // these kernels) legalise bf16 vector inserts through float.
      Type bits = b.getIntegerType(elem.getIntOrFloatBitWidth());
      data = LLVM::PoisonOp::create(b, loc, VectorType::get({vector}, bits));
      for (int64_t i = 0; i < vector; ++i) {
        SmallVector<int64_t> at(local);
        at[dim] += i;
        data = LLVM::InsertElementOp::create(
            b, loc, data, bitsOf(b, loc, values[layout.getSlot(at)]),
            i32Constant(b, loc, i));
      }
    }
    SmallVector<Value> coords = thread.coords(slot);
    Value index = indexOf(b, coords[0], coords[1]);
    Value ptr = sharedElementPtr(b, loc, elem, byteOffset, index);
    storeOwned(b, loc, data, ptr, thread.isOwner(slot), dataBytes);
  }
}

/// The widest run of slots contiguous along `dim` that one shared access
/// can take: a power of two dividing both the thread's run and the size
/// (so a run is inside the tile or outside as a whole), up to 16 bytes.
static int64_t vectorWidth(TileType type, unsigned dim) {
  DimLayout d = getLayout(type).getDim(dim);
  int64_t bytes = getSharedBytes(type.getElementType());
  int64_t width = 1;
  while (width * 2 * bytes <= 16 && d.perThread % (width * 2) == 0 &&
         d.size % (width * 2) == 0)
    width *= 2;
  return width;
}

//===----------------------------------------------------------------------===//
// Tensor cores
//===----------------------------------------------------------------------===//

namespace {

/// Where a tensor-core dot reads B: swizzled rows of 16-bit elements, from
/// its memdesc or staged from byte 0 (`bytes` of scratch). With `kRows`,
/// row k holds B[k, :] (ldmatrix.trans gives the fragments); otherwise row
/// n holds B[:, n]. Staged, K is padded to the MMA step and N to the
/// columns the warps compute (a memdesc fits them: tessel-pipeline checks).
struct BStaging {
  bool kRows;
  int64_t k, n;
  SwizzledRows rows;
  int64_t bytes;
};

} // namespace

static BStaging getBStaging(DotOp op, MmaEncodingAttr mma) {
  if (auto desc = dyn_cast<MemDescType>(op.getB().getType())) {
    ArrayRef<int64_t> kn = desc.getShape();
    return {desc.getContiguousDim() == 1, kn[0], kn[1], getSwizzledRows(desc),
            0};
  }
  auto bType = cast<TileType>(op.getB().getType());
  TileLayout accLayout = getLayout(op.getType());
  // Stage along the dimension in which each thread holds a run of B.
  bool kRows = getLayout(bType).getDim(0).perThread == 1;
  int64_t k = llvm::alignTo(bType.getDimSize(0), kMmaK);
  int64_t n =
      accLayout.getDim(1).numLocal() / 2 * kMmaN * mma.getWarpsPerCTA()[1];
  BStaging s{kRows, k, n, SwizzledRows(kRows ? k : n, kRows ? n : k), 0};
  s.bytes = s.rows.numElements() * 2;
  return s;
}

Value mlir::tessel::mmaOperandRegister(OpBuilder &b, Location loc, Value lo,
                                       Value hi, Type elem) {
  // A two-element vector: NVPTX packs two roundings from f32 into one
  // cvt.rn.{bf16x2,f16x2}.f32 (attention's P, the backward's dS).
  Value pair = vectorOf(b, loc, {lo, hi});
  if (elem.isF16())
    return pair;
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair);
}

/// An ldmatrix result register as an mma.sync operand register.
static Value fromLdmatrix(OpBuilder &b, Location loc, Value reg, Type elem) {
  if (!elem.isF16())
    return reg;
  return LLVM::BitcastOp::create(b, loc, VectorType::get({2}, elem), reg);
}

/// The result of a tensor-core dot: the accumulator slots after every
/// mma.sync of the warp's blocks.
static Slots lowerToMma(OpBuilder &b, Location loc, DotOp op,
                        MmaEncodingAttr mma, ValueRange aSlots,
                        ValueRange bValues, ValueRange acc) {
  auto aType = cast<TileType>(op.getA().getType());
  TileLayout accLayout = getLayout(op.getType());
  TileLayout aLayout = getLayout(aType);
  BStaging s = getBStaging(op, mma);
  Type elem = aSlots.front().getType();

  // B's first element: its memdesc, or staged (padding zeroed) at byte 0.
  Value bBase;
  if (isa<MemDescType>(op.getB().getType())) {
    bBase = bValues.front();
  } else {
    auto bType = cast<TileType>(op.getB().getType());
    int64_t threads = 32 * accLayout.getNumWarps();
    int64_t kSize = aType.getDimSize(1), nSize = bType.getDimSize(1);
    auto bIndex = [&](OpBuilder &b, Value k, Value n) {
      return s.kRows ? s.rows.index(b, loc, k, n) : s.rows.index(b, loc, n, k);
    };
    emitBarrier(b, loc);
    unsigned runDim = s.kRows ? 1 : 0;
    stageTile(b, loc, bValues, bType, 0, s.bytes, runDim,
              vectorWidth(bType, runDim), bIndex);
    zeroFill(b, loc, elem, 0, kSize, s.k - kSize, 0, s.n, threads, bIndex);
    zeroFill(b, loc, elem, 0, 0, kSize, nSize, s.n - nSize, threads, bIndex);
    emitBarrier(b, loc);
    bBase = sharedElementPtr(b, loc, elem, 0, i32Constant(b, loc, 0));
  }

  unsigned wm = mma.getWarpsPerCTA()[0], wn = mma.getWarpsPerCTA()[1];
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  Value lane = arith::AndIOp::create(b, loc, tid, i32Constant(b, loc, 31));
  Value warp = arith::ShRUIOp::create(b, loc, tid, i32Constant(b, loc, 5));
  Value warpN = arith::AndIOp::create(
      b, loc,
      arith::ShRUIOp::create(b, loc, warp,
                             i32Constant(b, loc, llvm::Log2_32(wm))),
      i32Constant(b, loc, wn - 1));
  // ldmatrix: lane l gives row l % 8 of matrix l / 8; the matrices of one
  // x4 are (block j, K 0..7), (j, 8..15), (j + 1, 0..7), (j + 1, 8..15).
  Value rowInMatrix =
      arith::AndIOp::create(b, loc, lane, i32Constant(b, loc, 7));
  Value matrix = arith::ShRUIOp::create(b, loc, lane, i32Constant(b, loc, 3));
  Value kHalf = arith::AndIOp::create(b, loc, matrix, i32Constant(b, loc, 1));
  Value nextBlock =
      arith::ShRUIOp::create(b, loc, matrix, i32Constant(b, loc, 1));
  // The lane's block column: this warp's first block, or the one after it
  // in the warp's round-robin share.
  Value laneBlock = arith::AddIOp::create(
      b, loc, warpN,
      arith::MulIOp::create(b, loc, nextBlock, i32Constant(b, loc, wn)));

  int64_t tilesM = accLayout.getDim(0).numLocal() / 2;
  int64_t tilesN = accLayout.getDim(1).numLocal() / 2;
  auto resultType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(4, b.getF32Type()));
  NVVM::MMATypes ptxType =
      elem.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(elem, 0.0));
  ThreadLayout aThread(b, loc, aLayout);
  // A's element (row r, K index c) of this thread, zero past K.
  auto aElement = [&](int64_t r, int64_t c) {
    Value v = aSlots[aLayout.getSlot({r, c})];
    if (Value inside = aThread.isInside(1, c))
      v = arith::SelectOp::create(b, loc, inside, v, zero);
    return v;
  };
  Slots result(acc.begin(), acc.end());
  for (int64_t step = 0; step < s.k / kMmaK; ++step) {
    // B registers {b0b1, b2b3} of each of the warp's block columns.
    SmallVector<std::array<Value, 2>> bRegs;
    for (int64_t j = 0; j < tilesN; j += 2) {
      int64_t count = std::min<int64_t>(2, tilesN - j);
      Value block = addConstant(b, loc, laneBlock, j * wn);
      Value row, chunk;
      if (s.kRows) {
        Value k = arith::AddIOp::create(
            b, loc, rowInMatrix,
            arith::MulIOp::create(b, loc, kHalf, i32Constant(b, loc, 8)));
        row = addConstant(b, loc, k, step * kMmaK);
        chunk = block;
      } else {
        row = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, block, i32Constant(b, loc, kMmaN)),
            rowInMatrix);
        chunk = addConstant(b, loc, kHalf, 2 * step);
      }
      Value ptr = LLVM::GEPOp::create(b, loc, bBase.getType(), elem, bBase,
                                      s.rows.chunkIndex(b, loc, row, chunk));
      auto regs = LLVM::LLVMStructType::getLiteral(
          b.getContext(), SmallVector<Type>(2 * count, b.getI32Type()));
      Value loaded = NVVM::LdMatrixOp::create(
          b, loc, regs, ptr, 2 * count,
          s.kRows ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
          NVVM::LdStMatrixEltType::B16);
      for (int64_t t = 0; t < count; ++t) {
        std::array<Value, 2> pair;
        for (int64_t h = 0; h < 2; ++h)
          pair[h] = fromLdmatrix(
              b, loc, LLVM::ExtractValueOp::create(b, loc, loaded, 2 * t + h),
              elem);
        bRegs.push_back(pair);
      }
    }
    for (int64_t i = 0; i < tilesM; ++i) {
      // a0a1: (row g, K 2t..), a2a3: (g + 8, 2t..), a4a5: (g, 2t + 8..),
      // a6a7: (g + 8, 2t + 8..).
      SmallVector<Value> aRegs;
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t r = 0; r < 2; ++r) {
          int64_t c = 4 * step + 2 * half;
          aRegs.push_back(mmaOperandRegister(b, loc, aElement(2 * i + r, c),
                                             aElement(2 * i + r, c + 1), elem));
        }
      for (int64_t j = 0; j < tilesN; ++j) {
        // c0 c1: (row g, columns 2t, 2t + 1), c2 c3: row g + 8.
        std::array<int64_t, 4> cSlots;
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t e = 0; e < 2; ++e)
            cSlots[2 * r + e] = accLayout.getSlot({2 * i + r, 2 * j + e});
        SmallVector<Value> c;
        for (int64_t slot : cSlots)
          c.push_back(result[slot]);
        auto mmaOp = NVVM::MmaOp::create(
            b, loc, resultType, aRegs, {bRegs[j][0], bRegs[j][1]}, c,
            {kMmaM, kMmaN, kMmaK}, std::nullopt, std::nullopt,
            std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
            std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                           NVVM::MMALayout::col});
        for (auto [r, slot] : llvm::enumerate(cSlots))
          result[slot] =
              LLVM::ExtractValueOp::create(b, loc, mmaOp.getRes(), r);
      }
    }
  }
  return result;
}

//===----------------------------------------------------------------------===//
// CUDA cores
//===----------------------------------------------------------------------===//

namespace {

/// Where a CUDA-core dot stages its operands, row-major: A (`m` x `k`) from
/// byte 0, B (`k` x `n`) from byte `bOffset`.
struct FmaStaging {
  int64_t m, n, k, bOffset, bytes;
};

} // namespace

static FmaStaging getFmaStaging(DotOp op) {
  auto aType = cast<TileType>(op.getA().getType());
  auto bType = cast<TileType>(op.getB().getType());
  int64_t elemBytes = getSharedBytes(aType.getElementType());
  FmaStaging s{aType.getDimSize(0), bType.getDimSize(1), aType.getDimSize(1)};
  s.bOffset = llvm::alignTo(s.m * s.k * elemBytes, 16);
  s.bytes = s.bOffset + s.k * s.n * elemBytes;
  return s;
}

/// The result of a dot on the CUDA cores: each thread's slots of `acc` plus
/// f32 FMAs over K.
static Slots lowerToFma(OpBuilder &b, Location loc, DotOp op, ValueRange a,
                        ValueRange bValues, ValueRange acc) {
  auto aType = cast<TileType>(op.getA().getType());
  auto bType = cast<TileType>(op.getB().getType());
  FmaStaging s = getFmaStaging(op);
  Type aElem = a.front().getType(), bElem = bValues.front().getType();
  emitBarrier(b, loc);
  stageTile(b, loc, a, aType, 0, s.bytes, 1, 1,
            [&](OpBuilder &b, Value row, Value col) {
              return rowMajor(b, loc, row, col, s.k);
            });
  stageTile(b, loc, bValues, bType, s.bOffset, s.bytes, 1, 1,
            [&](OpBuilder &b, Value row, Value col) {
              return rowMajor(b, loc, row, col, s.n);
            });
  emitBarrier(b, loc);

  TileLayout accLayout = getLayout(op.getType());
  ThreadLayout thread(b, loc, accLayout);
  int64_t rows = accLayout.getDim(0).numLocal();
  int64_t cols = accLayout.getDim(1).numLocal();
  // Element offsets of the thread's rows in A and columns in B.
  SmallVector<Value> rowStarts, colStarts;
  for (int64_t i = 0; i < rows; ++i)
    rowStarts.push_back(arith::MulIOp::create(b, loc, thread.coord(0, i),
                                              i32Constant(b, loc, s.k)));
  for (int64_t j = 0; j < cols; ++j)
    colStarts.push_back(thread.coord(1, j));

  Type f32 = b.getF32Type();
  auto toF32 = [&](OpBuilder &b, Value v) -> Value {
    return v.getType() == f32 ? v : arith::ExtFOp::create(b, loc, f32, v);
  };
  auto loop = scf::ForOp::create(
      b, loc, i32Constant(b, loc, 0), i32Constant(b, loc, s.k),
      i32Constant(b, loc, 1), acc,
      [&](OpBuilder &b, Location loc, Value kk, ValueRange sums) {
        SmallVector<Value> as, bs;
        for (Value start : rowStarts) {
          Value index = arith::AddIOp::create(b, loc, start, kk);
          as.push_back(
              toF32(b, loadShared(b, loc, aElem,
                                  sharedElementPtr(b, loc, aElem, 0, index))));
        }
        Value bRow =
            arith::MulIOp::create(b, loc, kk, i32Constant(b, loc, s.n));
        for (Value start : colStarts) {
          Value index = arith::AddIOp::create(b, loc, bRow, start);
          bs.push_back(toF32(
              b,
              loadShared(b, loc, bElem,
                         sharedElementPtr(b, loc, bElem, s.bOffset, index))));
        }
        SmallVector<Value> next;
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j)
            next.push_back(
                LLVM::FMAOp::create(b, loc, as[i], bs[j], sums[i * cols + j]));
        scf::YieldOp::create(b, loc, next);
      });
  return Slots(loop.getResults());
}

int64_t mlir::tessel::getDotBytes(DotOp op) {
  if (MmaEncodingAttr mma = getMmaEncoding(op))
    return getBStaging(op, mma).bytes;
  return getFmaStaging(op).bytes;
}

namespace {

struct DotLowering : OpConversionPattern<DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DotOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MmaEncodingAttr mma = getMmaEncoding(op);
    // mma.sync writes pairs of columns: runs of four are warpgroup MMA's.
    if (mma && mma.getColumnRun() != 2)
      return op.emitOpError("expects a warpgroup dot (sm_90a) for ")
             << mma << ": mma.sync writes its columns in pairs";
    Slots result = mma ? lowerToMma(rewriter, loc, op, mma, adaptor.getA(),
                                    adaptor.getB(), adaptor.getAcc())
                       : lowerToFma(rewriter, loc, op, adaptor.getA(),
                                    adaptor.getB(), adaptor.getAcc());
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

} // namespace

void mlir::tessel::populateDotPatterns(LLVMTypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<DotLowering>(converter, patterns.getContext());
}
