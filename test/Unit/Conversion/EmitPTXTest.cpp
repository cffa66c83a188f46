//===- EmitPTXTest.cpp - What the NVPTX back end runs on large kernels ----===//
//
// emitPTX keeps straight-line strength reduction off functions too large for
// its quadratic search. The kernel below computes (b + 1)·s and (b + 2)·s:
// strength reduction makes the second the first plus s (one multiply), and
// leaves it alone (two) once the function is padded past the limit.
//
//===----------------------------------------------------------------------===//

#include "Conversion/NVPTX/GPUCompile.h"

#include "llvm/IR/IRBuilder.h"

#include <gtest/gtest.h>

using namespace tessel;

namespace {

/// The PTX of the kernel with `padding` volatile stores after the products.
std::string ptxOf(unsigned padding) {
  std::string error;
  auto machine = createNVPTXTargetMachine("sm_90a", error);
  if (!machine) {
    ADD_FAILURE() << error;
    return {};
  }
  llvm::LLVMContext context;
  llvm::Module module("strength", context);
  module.setTargetTriple(machine->getTargetTriple());
  module.setDataLayout(machine->createDataLayout());
  auto *i64 = llvm::Type::getInt64Ty(context);
  auto *ptr = llvm::PointerType::get(context, 1);
  auto *function = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr, i64, i64},
                              false),
      llvm::Function::ExternalLinkage, "products", module);
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "", function));
  llvm::Value *out = function->getArg(0), *base = function->getArg(1),
              *stride = function->getArg(2);
  for (int64_t i = 1; i <= 2; ++i)
    b.CreateStore(b.CreateMul(b.CreateAdd(base, b.getInt64(i)), stride),
                  b.CreateGEP(i64, out, b.getInt64(i - 1)));
  for (unsigned i = 0; i < padding; ++i)
    b.CreateStore(b.getInt64(i), b.CreateGEP(i64, out, b.getInt64(i + 2)),
                  /*isVolatile=*/true);
  b.CreateRetVoid();
  std::string ptx = emitPTX(module, *machine, error);
  EXPECT_FALSE(ptx.empty()) << error;
  return ptx;
}

/// 64-bit multiplies, alone or fused with an add.
unsigned multiplies(const std::string &ptx) {
  unsigned n = 0;
  for (const char *op : {"mul.lo.s64", "mad.lo.s64"})
    for (size_t at = ptx.find(op); at != std::string::npos;
         at = ptx.find(op, at + 1))
      ++n;
  return n;
}

TEST(EmitPTX, StrengthReductionRunsOnSmallKernels) {
  std::string ptx = ptxOf(0);
  EXPECT_EQ(multiplies(ptx), 1u) << ptx;
}

TEST(EmitPTX, StrengthReductionSkipsLargeKernels) {
  // Past the limit of 10000 instructions (a store and its address each).
  EXPECT_EQ(multiplies(ptxOf(5001)), 2u);
}

} // namespace
