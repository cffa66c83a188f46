//===- TesselDialect.h - The tessel dialect ---------------------*- C++ -*-===//
//
// Public header of the tessel dialect: the dialect, its types, attributes and
// operations.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TESSELDIALECT_H
#define TESSEL_TESSELDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "tessel/TesselOpsDialect.h.inc"

#include "tessel/TesselEnums.h.inc"

#include "tessel/TesselAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessel/TesselAttrs.h.inc"

namespace mlir::tessel {
/// Where the elements of a 2-D tile sit in shared memory (the layout of every
/// !tessel.memdesc). The contiguous dimension is padded to whole 16-byte
/// chunks and, for 16-bit elements, cut into column blocks of at most 8
/// chunks (128 bytes; wider elements keep whole rows); a block holds every
/// row at a pitch of its own width, and within a row of 16-bit elements the
/// chunk index is XOR-ed with (row / perPhase) % maxPhase (wider elements
/// keep plain rows, maxPhase 1). For blocks of 8,
/// 4 or 2 chunks this is exactly the 128-, 64- or 32-byte swizzle of
/// Hopper's tensor cores and bulk copies (so wgmma reads a tile through a
/// matrix descriptor) and, for every width, eight rows at one chunk --
/// what one ldmatrix reads -- fall in different banks.
struct SharedTileLayout {
  int64_t rows;       ///< non-contiguous extent
  int64_t chunkElems; ///< elements per 16-byte chunk
  int64_t blockElems; ///< elements per row of a column block
  int64_t blockRows;  ///< rows per block (padded to 8 between blocks)
  int64_t blocks;     ///< column blocks
  int64_t perPhase, maxPhase;
  int64_t elemBytes;

  /// `pitch`: elements from one row to the next (32-bit rows; 0: whole
  /// 16-byte chunks).
  static SharedTileLayout get(int64_t rows, int64_t rowElems, int64_t elemBytes,
                              int64_t pitch = 0);
  int64_t numElements() const { return blocks * blockRows * blockElems; }
  int64_t getBlockBytes() const { return blockElems * elemBytes; }
  int64_t getBlockStrideBytes() const { return blockRows * getBlockBytes(); }
  /// Elements of the widest access that the rows' alignment allows along a
  /// row: a 16-byte chunk, 8 bytes where 32-bit rows are padded.
  int64_t getAccessElems() const;
  /// The tensor-core swizzle width in bytes (128, 64 or 32) when a matrix
  /// descriptor can describe this layout; 0 otherwise.
  int64_t getNvmmaSwizzleBytes() const;
};
} // namespace mlir::tessel

#define GET_TYPEDEF_CLASSES
#include "tessel/TesselOpsTypes.h.inc"

namespace mlir::tessel {
/// A pointer, or a tile of pointers.
bool isPtrLike(Type type);
/// i1, or a tile of i1.
bool isMaskLike(Type type);
/// The shape of a tile; empty for a scalar.
ArrayRef<int64_t> getShapeOrEmpty(Type type);
/// For a pointer, its pointee; for a tile of pointers, the tile of pointees.
Type getPointeeLikeType(Type ptrLike);
/// i1 with the shape (and encoding) of `type`.
Type getMaskLikeType(Type type);
/// The kernel that `kernel`'s `tessel.then` names, or null.
func::FuncOp getFollowUpKernel(func::FuncOp kernel);
/// The kernel whose `tessel.then` names `kernel`, or null.
func::FuncOp getLeadingKernel(func::FuncOp kernel);
/// The `tessel.multiple_of` hint of argument `index` of `kernel`; 0 when it
/// has none.
int64_t getMultipleOf(func::FuncOp kernel, unsigned index);
/// Whether argument `index` of `kernel` was compiled as None (tessel.none).
bool isNoneArg(func::FuncOp kernel, unsigned index);
/// Whether a kernel argument of `type` may carry `tessel.multiple_of`: i32,
/// i64 and pointers, which a launch passes as integers and addresses.
bool acceptsMultipleOf(Type type);
/// How tensor-memory-accelerator copies move one block of a tensor
/// descriptor into a memdesc of its tile (rows x cols, cols contiguous) laid
/// out as SharedTileLayout says: `copies` boxes, one per column block, box k
/// starting `k * box[rank - 1]` elements along the innermost dimension and
/// `k * copyStrideBytes` bytes into the buffer.
struct TMABox {
  SmallVector<int64_t> box; ///< per dimension, outermost first
  int64_t swizzleBytes;     ///< 0, 32, 64 or 128
  int64_t copies;
  int64_t copyStrideBytes;
  int64_t bytes; ///< written by all the copies together
};
/// The copies of one block of `desc`; nullopt when TMA cannot write its tile
/// in that layout (16-bit elements, a 2-D tile whose columns are the
/// innermost dimension, rows a multiple of 8 and at most 256; or a vector
/// of 32-bit elements along the innermost dimension, 32 to 256 of them, a
/// multiple of 32).
std::optional<TMABox> getTMABox(TensorDescType desc);
/// A kernel argument's name: the parameter's name the front end put in its
/// NameLoc, else "argN". Bundles, tessel-run and the Python bindings name
/// parameters (and launch expressions name values) this way.
std::string getKernelArgName(BlockArgument arg);
/// Warps a launch of `kernel` needs: its tessel.num_warps (4 when absent)
/// and the producer warps of a tessel.warp_specialize in it.
int64_t getLaunchWarps(func::FuncOp kernel);
/// The `tessel.target` of the module around `op` ("sm_80" when none).
StringRef getTarget(Operation *op);
/// Whether `target` is one the compiler generates code for: "sm_80",
/// "sm_90" or "sm_90a" (what error messages list).
bool isKnownTarget(StringRef target);
/// Whether the target has Hopper's warpgroup MMA (wgmma): sm_90a only (the
/// architecture-specific features do not carry forward to sm_100).
bool hasWarpGroupMma(Operation *op);
/// Why a dot of `a` (M x K: a tile or a memdesc) and `b` (K x N) into `acc`
/// cannot run as a tessel.warpgroup_dot; empty when it can. With a null
/// `b`, only A and the accumulator are checked (B then still has to be
/// placed in a memdesc of the layout wgmma reads: getWarpGroupDotOperandB).
std::string whyNotWarpGroupDot(Type a, MemDescType b, TileType acc);
/// The `columns` of the B a warpgroup dot into `acc` reads: `acc` for runs
/// of four columns (B reordered so that wgmma's order lands them), none for
/// pairs.
Attribute getWarpGroupBColumns(MmaEncodingAttr acc);
/// For a warpgroup dot into an `n`-column accumulator laid out as `acc`, the
/// row of B's K-contiguous storage that each of B's n columns must take
/// (a memdesc's `columns`): the identity for columnRun 2; failure where the
/// warpgroups' blocks cannot hold the layout's runs.
FailureOr<SmallVector<int64_t>> getWarpGroupColumnRows(MmaEncodingAttr acc,
                                                       int64_t n);
/// Why a memdesc of `shape`, `elementType`, `order` and `pitch` cannot take
/// its columns in the order `columns` (a memdesc's `columns`) puts them;
/// empty when it can. The memdesc verifier's rule, for those who ask first.
std::string whyNotMemDescColumns(ArrayRef<int64_t> shape, Type elementType,
                                 ArrayRef<unsigned> order, int64_t pitch,
                                 Attribute columns);
/// A memdesc for the A operand (M x K) of a warpgroup dot, contiguous along
/// `contiguousDim` (K by default; M reads it transposed), in the layout
/// wgmma reads; null if none exists.
MemDescType getWarpGroupDotOperandA(MLIRContext *ctx, ArrayRef<int64_t> mk,
                                    Type elem, unsigned contiguousDim = 1);
/// A memdesc for the B operand (K x N) of a warpgroup dot, contiguous along
/// `contiguousDim`, in the layout wgmma reads, its columns in the order of
/// `columns` (a memdesc's parameter); null if none exists.
MemDescType getWarpGroupDotOperandB(MLIRContext *ctx, ArrayRef<int64_t> kn,
                                    Type elem, unsigned contiguousDim,
                                    Attribute columns = {});
/// The memdesc that `op` views when it is a view of a place in shared
/// memory (memdesc_index, memdesc_trans, memdesc_rows); null otherwise.
Value getViewedMemDesc(Operation *op);
} // namespace mlir::tessel

#define GET_OP_CLASSES
#include "tessel/TesselOps.h.inc"

#endif // TESSEL_TESSELDIALECT_H
