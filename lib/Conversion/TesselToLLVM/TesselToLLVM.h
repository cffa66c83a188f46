//===- TesselToLLVM.h - tessel to the LLVM and NVVM dialects ----*- C++ -*-===//

#ifndef TESSEL_CONVERSION_TESSELTOLLVM_H
#define TESSEL_CONVERSION_TESSELTOLLVM_H

#include "tessel/TesselDialect.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"

namespace mlir::tessel {

/// Tiles become one value per slot of their layout, pointers global
/// `!llvm.ptr<1>`.
void addTesselTypeConversions(LLVMTypeConverter &converter);

/// Elements per global access of loads and stores (see getAccessWidths).
using AccessWidths = DenseMap<Operation *, int64_t>;

/// One pattern per tessel op (or op family), plus the scalar math ops whose
/// GPU lowering tessel chooses (approximate ex2/lg2).
/// `offsets`: the shared-memory offsets of the local_alloc ops
/// (layoutSharedMemory).
void populateTesselToLLVMPatterns(
    LLVMTypeConverter &converter, RewritePatternSet &patterns,
    const AccessWidths &widths, const DenseMap<Operation *, int64_t> &offsets);

/// Loops whose body yields every lane of a small vector carry that vector
/// instead of its lanes (see CarryVectorLanes.cpp); run on the converted
/// scf loops, before they become branches.
void populateCarryVectorLanesPatterns(RewritePatternSet &patterns);

/// tessel.warpgroup_id and the named barriers.
void populateWarpSpecializePatterns(LLVMTypeConverter &converter,
                                    RewritePatternSet &patterns);

/// Replaces each tessel.warp_specialize (its regions already lowered) by a
/// branch on the thread index (see WarpSpecializeToLLVM.cpp).
void lowerWarpSpecialize(ModuleOp module);

/// Dynamic shared memory one CTA may use on Hopper: the opt-in limit of
/// H100 and H200, 227 KB (an SM has 228 KB), and the most any GPU grants (a
/// kernel that needs more is refused when lowered).
constexpr int64_t kHopperSharedBytes = 227 * 1024;
/// What sm_80 code may count on: 99 KB, the opt-in limit of the sm_86 and
/// sm_89 GPUs that run it too (an A100 allows 163 KB).
constexpr int64_t kSm80SharedBytes = 99 * 1024;

/// Bytes of dynamic shared memory a kernel with assigned layouts needs once
/// lowered: the largest scratch area of its ops (they take turns, fenced by
/// barriers), then its local_alloc regions; more than half of an SM's when
/// its warps resize their registers (tessel.warp_specialize).
int64_t getKernelSharedBytes(func::FuncOp kernel);
/// The dynamic shared memory a CTA of `kernel` may use on its target:
/// kHopperSharedBytes where it runs warpgroup MMA (sm_90a), else
/// kSm80SharedBytes.
int64_t getKernelSharedLimit(func::FuncOp kernel);

/// For each workspace argument of a persistent kernel (the trailing
/// pointers `tessel.workspace` describes), the bytes of one program's slot
/// in the packed workspace: a multiple of 16.
SmallVector<int64_t> getWorkspaceSlotBytes(func::FuncOp kernel);

/// The CTA's dynamic shared memory buffer.
constexpr llvm::StringLiteral kSharedMemorySymbol = "tessel_smem";
/// Bytes of a TMA tensor map (CUtensorMap) kernel parameter.
constexpr int64_t kTensorMapBytes = 128;

} // namespace mlir::tessel

#endif // TESSEL_CONVERSION_TESSELTOLLVM_H
