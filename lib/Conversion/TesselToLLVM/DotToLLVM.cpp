//===- DotToLLVM.cpp - Matrix products on tensor and CUDA cores -----------===//
//
// Both operands go to shared memory (row-major A, then row-major B). With
// f16 or bf16 operands the warps then split the result into 16x8 tiles and
// compute them with mma.sync m16n8k16 (sm_80 and later), loading their
// fragments from shared memory; the C fragments go back to shared memory
// (f32, row-major), from where each thread adds its accumulator slots. Other
// operand types take the CUDA cores: each thread accumulates its slots with
// f32 FMAs over K, reading the rows of A and the columns of B they need.
//
// The tensor-core path pads M, N and K up to the MMA shape in shared memory
// (halo tiles such as 69x74 stay on tensor cores): the padding of K is
// zero-filled, the padded rows of A and columns of B only feed C elements
// that are never read. Operand and C rows are also padded by kRowPad
// elements, so that the rows a fragment load touches fall in different
// banks.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TesselToLLVM/Utils.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The mma.sync shape, and the padding of shared-memory rows in elements
/// (for 16-bit operands: rows stay 16-byte aligned, each shifted by 4 banks
/// from the one before).
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16, kRowPad = 8;

/// Where a dot keeps its operands (and, on tensor cores, C) in shared
/// memory: A is `m` rows of `strideA` elements from byte 0, B `k` rows of
/// `strideB` elements from byte `bOffset`; C (tensor cores only) reuses the
/// area from byte 0, `m` rows of `strideC` f32. `bytes` covers all three.
struct DotStaging {
  bool mma;
  int64_t m, n, k; // padded to the MMA shape on tensor cores
  int64_t strideA, strideB, strideC;
  int64_t bOffset, bytes;
};

} // namespace

static bool usesTensorCores(DotOp op) {
  Type elem = cast<TileType>(op.getA().getType()).getElementType();
  return elem.isF16() || elem.isBF16();
}

static DotStaging getStaging(DotOp op) {
  auto aType = cast<TileType>(op.getA().getType());
  auto bType = cast<TileType>(op.getB().getType());
  int64_t elemBytes = getSharedBytes(aType.getElementType());
  DotStaging s{usesTensorCores(op), aType.getDimSize(0), bType.getDimSize(1),
               aType.getDimSize(1)};
  if (s.mma) {
    s.m = llvm::alignTo(s.m, kMmaM);
    s.n = llvm::alignTo(s.n, kMmaN);
    s.k = llvm::alignTo(s.k, kMmaK);
  }
  int64_t pad = s.mma ? kRowPad : 0;
  s.strideA = s.k + pad;
  s.strideB = s.n + pad;
  s.strideC = s.n + pad;
  s.bOffset = llvm::alignTo(s.m * s.strideA * elemBytes, 16);
  s.bytes = s.bOffset + s.k * s.strideB * elemBytes;
  if (s.mma)
    s.bytes = std::max(s.bytes, s.m * s.strideC * 4);
  return s;
}

int64_t mlir::tessel::getDotBytes(DotOp op) { return getStaging(op).bytes; }

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

/// Writes the elements of an operand tile (each by its owner) into a
/// row-major array with rows of `stride` elements at `byteOffset`.
static void stageOperand(OpBuilder &b, Location loc, ValueRange values,
                         TileType type, int64_t byteOffset, int64_t stride,
                         int64_t dataBytes) {
  ThreadLayout thread(b, loc, getLayout(type));
  for (auto [slot, value] : llvm::enumerate(values)) {
    SmallVector<Value> coords = thread.coords(slot);
    Value index = rowMajor(b, loc, coords[0], coords[1], stride);
    Value ptr = sharedElementPtr(b, loc, value.getType(), byteOffset, index);
    storeOwned(b, loc, value, ptr, thread.isOwner(slot), dataBytes);
  }
}

/// Zeros `rows` x `cols` elements of `type` from (row0, col0) of a
/// row-major array, spread over the CTA's threads.
static void zeroFill(OpBuilder &b, Location loc, Type type, int64_t byteOffset,
                     int64_t stride, int64_t row0, int64_t rows, int64_t col0,
                     int64_t cols, int64_t numThreads) {
  if (rows == 0 || cols == 0)
    return;
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  Value count = i32Constant(b, loc, rows * cols);
  Value step = i32Constant(b, loc, numThreads);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  scf::ForOp::create(
      b, loc, tid, count, step, ValueRange{},
      [&](OpBuilder &b, Location loc, Value i, ValueRange) {
        Value width = i32Constant(b, loc, cols);
        Value row = arith::DivUIOp::create(b, loc, i, width);
        Value col = arith::RemUIOp::create(b, loc, i, width);
        Value index = rowMajor(b, loc, addConstant(b, loc, row, row0),
                               addConstant(b, loc, col, col0), stride);
        storeShared(b, loc, zero,
                    sharedElementPtr(b, loc, type, byteOffset, index));
        scf::YieldOp::create(b, loc);
      });
}

namespace {

/// The 16x8 result tiles one warp computes: the warps form a grid of
/// warpsM x warpsN over the (m/16) x (n/8) tiles, and warp (wm, wn) takes
/// tile rows wm, wm + warpsM, ... and tile columns wn, wn + warpsN, ...
/// Where the grid does not divide the tiles, the extra positions repeat the
/// last tile and do not write their result.
struct WarpTiles {
  SmallVector<Value> rows, cols;   // first row / column of each tile
  SmallVector<Value> rowOk, colOk; // null where always a real tile
};

} // namespace

static WarpTiles assignTiles(OpBuilder &b, Location loc, Value warp,
                             int64_t numWarps, int64_t tilesM, int64_t tilesN) {
  // The warps split the tile rows as far as they divide them evenly, then
  // the columns: the tiles of a warp that share a row share A fragments.
  int64_t warpsM = 1;
  while (warpsM * 2 <= numWarps && tilesM % (warpsM * 2) == 0)
    warpsM *= 2;
  int64_t warpsN = numWarps / warpsM;
  Value wm =
      arith::AndIOp::create(b, loc, warp, i32Constant(b, loc, warpsM - 1));
  Value wn = arith::ShRUIOp::create(b, loc, warp,
                                    i32Constant(b, loc, llvm::Log2_64(warpsM)));
  WarpTiles tiles;
  auto place = [&](Value first, int64_t count, int64_t warps, int64_t size,
                   SmallVector<Value> &starts, SmallVector<Value> &ok) {
    for (int64_t i = 0, e = llvm::divideCeil(count, warps); i < e; ++i) {
      Value tile = addConstant(b, loc, first, i * warps);
      Value valid;
      if ((i + 1) * warps > count) {
        Value last = i32Constant(b, loc, count - 1);
        valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, tile,
                                      last);
        tile = arith::MinUIOp::create(b, loc, tile, last);
      }
      starts.push_back(
          arith::MulIOp::create(b, loc, tile, i32Constant(b, loc, size)));
      ok.push_back(valid);
    }
  };
  place(wm, tilesM, warpsM, kMmaM, tiles.rows, tiles.rowOk);
  place(wn, tilesN, warpsN, kMmaN, tiles.cols, tiles.colOk);
  return tiles;
}

/// The vector <lo, hi>.
static Value makePair(OpBuilder &b, Location loc, Value lo, Value hi) {
  Value pair =
      LLVM::PoisonOp::create(b, loc, VectorType::get({2}, lo.getType()));
  Value first = i32Constant(b, loc, 0);
  pair = LLVM::InsertElementOp::create(b, loc, pair, lo, first);
  Value second = i32Constant(b, loc, 1);
  return LLVM::InsertElementOp::create(b, loc, pair, hi, second);
}

/// Two adjacent 16-bit elements as one mma.sync operand register:
/// vector<2xf16> for f16, i32 for bf16 (what the intrinsics take).
static Value operandRegister(OpBuilder &b, Location loc, Value pair) {
  auto vector = cast<VectorType>(pair.getType());
  if (vector.getElementType().isF16())
    return pair;
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair);
}

/// The result of `op` on tensor cores: `acc` plus the C fragments, read back
/// through shared memory into the accumulator's slots.
static Slots lowerToMma(OpBuilder &b, Location loc, DotOp op,
                        const DotStaging &s, Type elem, ValueRange acc) {
  TileLayout accLayout = getLayout(op.getType());
  int64_t numWarps = accLayout.getNumWarps();
  Type f32 = b.getF32Type();
  auto pairType = VectorType::get({2}, elem);

  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  Value lane = arith::AndIOp::create(b, loc, tid, i32Constant(b, loc, 31));
  Value warp = arith::ShRUIOp::create(b, loc, tid, i32Constant(b, loc, 5));
  // PTX ISA fragment layout of m16n8k16: lane = 4 * group + thread-in-group.
  Value group = arith::ShRUIOp::create(b, loc, lane, i32Constant(b, loc, 2));
  Value inGroup = arith::AndIOp::create(b, loc, lane, i32Constant(b, loc, 3));
  Value pairCol =
      arith::ShLIOp::create(b, loc, inGroup, i32Constant(b, loc, 1));
  WarpTiles tiles =
      assignTiles(b, loc, warp, numWarps, s.m / kMmaM, s.n / kMmaN);
  int64_t tm = tiles.rows.size(), tn = tiles.cols.size();

  // Element indices at k = 0: A's row `group` of each tile at column
  // 2 * inGroup; B's row 2 * inGroup at column `group` of each tile.
  SmallVector<Value> aStarts, bStarts;
  for (Value row : tiles.rows)
    aStarts.push_back(rowMajor(
        b, loc, arith::AddIOp::create(b, loc, row, group), pairCol, s.strideA));
  for (Value col : tiles.cols)
    bStarts.push_back(rowMajor(
        b, loc, pairCol, arith::AddIOp::create(b, loc, col, group), s.strideB));

  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  SmallVector<Value> init(tm * tn * 4, zero);
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                     SmallVector<Type>(4, f32));
  NVVM::MMATypes ptxType =
      elem.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  auto loop = scf::ForOp::create(
      b, loc, i32Constant(b, loc, 0), i32Constant(b, loc, s.k),
      i32Constant(b, loc, kMmaK), init,
      [&](OpBuilder &b, Location loc, Value kk, ValueRange sums) {
        // a0..a3: rows +0/+8, columns +0/+8 of the thread's pairs.
        auto loadA = [&](Value start, int64_t dr, int64_t dc) {
          Value index = arith::AddIOp::create(b, loc, start, kk);
          index = addConstant(b, loc, index, dr * s.strideA + dc);
          Value ptr = sharedElementPtr(b, loc, elem, 0, index);
          Value pair = LLVM::LoadOp::create(b, loc, pairType, ptr);
          return operandRegister(b, loc, pair);
        };
        // b0, b1: rows 2 * inGroup (+1) and 2 * inGroup + 8 (+9) of one
        // column, 16-bit loads packed into a pair.
        Value kRow =
            arith::MulIOp::create(b, loc, kk, i32Constant(b, loc, s.strideB));
        auto loadB = [&](Value start, int64_t dr) {
          Value index = arith::AddIOp::create(b, loc, start, kRow);
          auto load = [&](int64_t row) -> Value {
            Value at = addConstant(b, loc, index, row * s.strideB);
            Value ptr = sharedElementPtr(b, loc, elem, s.bOffset, at);
            return LLVM::LoadOp::create(b, loc, elem, ptr);
          };
          Value lo = load(dr);
          Value hi = load(dr + 1);
          return operandRegister(b, loc, makePair(b, loc, lo, hi));
        };
        SmallVector<SmallVector<Value, 4>> as;
        SmallVector<SmallVector<Value, 2>> bs;
        for (Value start : aStarts)
          as.push_back({loadA(start, 0, 0), loadA(start, 8, 0),
                        loadA(start, 0, 8), loadA(start, 8, 8)});
        for (Value start : bStarts)
          bs.push_back({loadB(start, 0), loadB(start, 8)});
        SmallVector<Value> next;
        for (int64_t i = 0; i < tm; ++i) {
          for (int64_t j = 0; j < tn; ++j) {
            ValueRange c = sums.slice((i * tn + j) * 4, 4);
            auto mma = NVVM::MmaOp::create(
                b, loc, resultType, as[i], bs[j], c, {kMmaM, kMmaN, kMmaK},
                std::nullopt, std::nullopt,
                std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
                std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                               NVVM::MMALayout::col});
            for (int64_t r = 0; r < 4; ++r)
              next.push_back(
                  LLVM::ExtractValueOp::create(b, loc, mma.getRes(), r));
          }
        }
        scf::YieldOp::create(b, loc, next);
      });

  // c0, c1 at row `group`, columns 2 * inGroup (+1); c2, c3 eight rows
  // below: one 8-byte store each.
  emitBarrier(b, loc);
  for (int64_t i = 0; i < tm; ++i) {
    for (int64_t j = 0; j < tn; ++j) {
      Value owner = andPredicates(b, loc, tiles.rowOk[i], tiles.colOk[j]);
      Value row = arith::AddIOp::create(b, loc, tiles.rows[i], group);
      Value col = arith::AddIOp::create(b, loc, tiles.cols[j], pairCol);
      Value index = rowMajor(b, loc, row, col, s.strideC);
      for (int64_t half = 0; half < 2; ++half) {
        int64_t first = (i * tn + j) * 4 + half * 2;
        Value pair =
            makePair(b, loc, loop.getResult(first), loop.getResult(first + 1));
        Value at = addConstant(b, loc, index, half * 8 * s.strideC);
        storeOwned(b, loc, pair, sharedElementPtr(b, loc, f32, 0, at), owner,
                   s.bytes);
      }
    }
  }
  emitBarrier(b, loc);
  ThreadLayout thread(b, loc, accLayout);
  Slots result;
  for (auto [slot, value] : llvm::enumerate(acc)) {
    SmallVector<Value> coords = thread.coords(slot);
    Value index = rowMajor(b, loc, coords[0], coords[1], s.strideC);
    Value c = loadShared(b, loc, f32, sharedElementPtr(b, loc, f32, 0, index));
    result.push_back(arith::AddFOp::create(b, loc, value, c));
  }
  return result;
}

/// The result of `op` on the CUDA cores: each thread's slots of `acc` plus
/// f32 FMAs over K.
static Slots lowerToFma(OpBuilder &b, Location loc, DotOp op,
                        const DotStaging &s, Type aElem, Type bElem,
                        ValueRange acc) {
  TileLayout accLayout = getLayout(op.getType());
  ThreadLayout thread(b, loc, accLayout);
  int64_t rows = accLayout.getDim(0).numLocal();
  int64_t cols = accLayout.getDim(1).numLocal();
  // Element offsets of the thread's rows in A and columns in B.
  SmallVector<Value> rowStarts, colStarts;
  for (int64_t i = 0; i < rows; ++i) {
    Value row = thread.coord(0, i);
    rowStarts.push_back(
        arith::MulIOp::create(b, loc, row, i32Constant(b, loc, s.strideA)));
  }
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
            arith::MulIOp::create(b, loc, kk, i32Constant(b, loc, s.strideB));
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

namespace {

struct DotLowering : OpConversionPattern<DotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DotOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto aType = cast<TileType>(op.getA().getType());
    auto bType = cast<TileType>(op.getB().getType());
    DotStaging s = getStaging(op);
    Type aElem = adaptor.getA().front().getType();
    Type bElem = adaptor.getB().front().getType();

    emitBarrier(rewriter, loc);
    stageOperand(rewriter, loc, adaptor.getA(), aType, 0, s.strideA, s.bytes);
    stageOperand(rewriter, loc, adaptor.getB(), bType, s.bOffset, s.strideB,
                 s.bytes);
    // The padding of K takes part in the sums: zeros there.
    int64_t m = aType.getDimSize(0), k = aType.getDimSize(1);
    int64_t threads = 32 * getLayout(op.getType()).getNumWarps();
    zeroFill(rewriter, loc, aElem, 0, s.strideA, 0, m, k, s.k - k, threads);
    zeroFill(rewriter, loc, bElem, s.bOffset, s.strideB, k, s.k - k, 0, s.n,
             threads);
    emitBarrier(rewriter, loc);

    Slots result =
        s.mma
            ? lowerToMma(rewriter, loc, op, s, aElem, adaptor.getAcc())
            : lowerToFma(rewriter, loc, op, s, aElem, bElem, adaptor.getAcc());
    rewriter.replaceOpWithMultiple(op, {result});
    return success();
  }
};

} // namespace

void mlir::tessel::populateDotPatterns(LLVMTypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<DotLowering>(converter, patterns.getContext());
}
