//===- EmitPTXTest.cpp - What the NVPTX back end runs on large kernels ----===//
//
// emitPTX keeps straight-line strength reduction and global value numbering
// off functions too large for their cost. The kernel below computes
// (b + 1)·s and (b + 2)·s: strength reduction makes the second the first
// plus s (one multiply); and it loads in[0] in two blocks, once after value
// numbering. Padded past the limit: two multiplies, two loads.
//
//===----------------------------------------------------------------------===//

#include "Conversion/NVPTX/GPUCompile.h"

#include "llvm/ADT/ArrayRef.h"
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
      llvm::FunctionType::get(llvm::Type::getVoidTy(context),
                              {ptr, ptr, i64, i64}, false),
      llvm::Function::ExternalLinkage, "products", module);
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  function->addParamAttr(0, llvm::Attribute::NoAlias);
  function->addParamAttr(1, llvm::Attribute::NoAlias);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "", function));
  llvm::Value *out = function->getArg(0), *in = function->getArg(1),
              *base = function->getArg(2), *stride = function->getArg(3);
  for (int64_t i = 1; i <= 2; ++i)
    b.CreateStore(b.CreateMul(b.CreateAdd(base, b.getInt64(i)), stride),
                  b.CreateGEP(i64, out, b.getInt64(i - 1)));
  // in[0] again in a block of its own, after a store to out, which cannot
  // alias it: value numbering loads it once (instruction selection sees one
  // block at a time).
  b.CreateStore(b.CreateLoad(i64, in), b.CreateGEP(i64, out, b.getInt64(2)));
  auto *again = llvm::BasicBlock::Create(context, "again", function);
  auto *rest = llvm::BasicBlock::Create(context, "rest", function);
  b.CreateCondBr(b.CreateICmpNE(base, b.getInt64(0)), again, rest);
  b.SetInsertPoint(again);
  b.CreateStore(b.CreateLoad(i64, in), b.CreateGEP(i64, out, b.getInt64(3)));
  b.CreateBr(rest);
  b.SetInsertPoint(rest);
  for (unsigned i = 0; i < padding; ++i)
    b.CreateStore(b.getInt64(i), b.CreateGEP(i64, out, b.getInt64(i + 4)),
                  /*isVolatile=*/true);
  b.CreateRetVoid();
  std::string ptx = emitPTX(module, *machine, error);
  EXPECT_FALSE(ptx.empty()) << error;
  return ptx;
}

unsigned count(const std::string &ptx, llvm::ArrayRef<const char *> ops) {
  unsigned n = 0;
  for (const char *op : ops)
    for (size_t at = ptx.find(op); at != std::string::npos;
         at = ptx.find(op, at + 1))
      ++n;
  return n;
}

/// 64-bit multiplies, alone or fused with an add.
unsigned multiplies(const std::string &ptx) {
  return count(ptx, {"mul.lo.s64", "mad.lo.s64"});
}

unsigned loads(const std::string &ptx) { return count(ptx, {"ld.global"}); }

TEST(EmitPTX, QuadraticPassesRunOnSmallKernels) {
  std::string ptx = ptxOf(0);
  EXPECT_EQ(multiplies(ptx), 1u) << ptx;
  EXPECT_EQ(loads(ptx), 1u) << ptx;
}

TEST(EmitPTX, QuadraticPassesSkipLargeKernels) {
  // Past the limit of 10000 instructions (a store and its address each).
  std::string ptx = ptxOf(5001);
  EXPECT_EQ(multiplies(ptx), 2u);
  EXPECT_EQ(loads(ptx), 2u);
}

} // namespace
