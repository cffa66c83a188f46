//===- TestUtils.cpp - Parse and run hand-written kernels -----------------===//

#include "TestUtils.h"

#include "tessel/Passes.h"
#include "tessel/TesselDialect.h"

#include "gtest/gtest.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace tessel;
using namespace tessel::test;

TestModule::TestModule(const std::string &source) {
  context.loadDialect<mlir::tessel::TesselDialect, mlir::arith::ArithDialect,
                      mlir::func::FuncDialect, mlir::math::MathDialect,
                      mlir::scf::SCFDialect>();
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
  });
  module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module && diagnostics.empty())
    diagnostics = "parse failed";
}

std::string TestModule::lower(bool streamK) {
  if (!module)
    return "no module: " + diagnostics;
  mlir::PassManager pm(&context);
  pm.addPass(mlir::tessel::createTesselExpandOnline());
  if (streamK)
    pm.addPass(mlir::tessel::createTesselLowerStreamK());
  if (mlir::failed(pm.run(*module)))
    return "lowering failed: " + diagnostics;
  return "";
}

mlir::func::FuncOp TestModule::kernel(const std::string &name) {
  if (!module)
    return {};
  return mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
      *module, mlir::StringAttr::get(&context, name));
}

/// Zeroed workspaces (one per state value) and flags for a kernel lowered
/// by tessel-lower-stream-k; nothing for any other kernel.
static std::vector<KernelArg>
workspaceArgs(TestModule &t, const std::string &name, int64_t programs) {
  mlir::func::FuncOp kernel = t.kernel(name);
  auto sizes = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>(
      mlir::tessel::TesselDialect::getWorkspaceAttrName());
  if (!sizes)
    return {};
  std::vector<KernelArg> args;
  auto types = kernel.getArgumentTypes().take_back(sizes.size());
  for (auto [type, size] : llvm::zip(types, sizes.asArrayRef())) {
    auto pointee = mlir::cast<mlir::tessel::PtrType>(type).getPointeeType();
    args.push_back(buf(t.buffer(*dtypeOf(pointee), programs * size)));
  }
  return args;
}

/// Runs `kernel` in `plain` and in `lowered` on buffers made by `setup` (and
/// the lowered kernel's workspaces) and compares the buffers `setup` made.
static void expectSameRuns(TestModule &plain, TestModule &lowered,
                           const std::string &kernel, const Setup &setup,
                           std::array<int64_t, 3> grid) {
  ASSERT_EQ(plain.parseErrors(), "");
  std::vector<KernelArg> args = setup(plain), lowArgs = setup(lowered);
  int shared = plain.memory.numBuffers();
  std::vector<KernelArg> extra =
      workspaceArgs(lowered, kernel, grid[0] * grid[1] * grid[2]);
  lowArgs.insert(lowArgs.end(), extra.begin(), extra.end());
  ASSERT_EQ(plain.run(kernel, args, grid), "");
  ASSERT_EQ(lowered.run(kernel, lowArgs, grid), "");
  for (int id = 0; id < shared; ++id) {
    size_t bytes = plain.memory.size(id) * dtypeSize(plain.memory.dtype(id));
    EXPECT_EQ(
        std::memcmp(plain.memory.data(id), lowered.memory.data(id), bytes), 0)
        << "buffer #" << id << " of kernel " << kernel;
  }
}

void tessel::test::expectSameAfterExpansion(const std::string &source,
                                            const std::string &kernel,
                                            const Setup &setup,
                                            std::array<int64_t, 3> grid) {
  TestModule plain(source), expanded(source);
  ASSERT_EQ(expanded.lower(/*streamK=*/false), "");
  expectSameRuns(plain, expanded, kernel, setup, grid);
}

void tessel::test::expectSameAfterLowering(const std::string &source,
                                           const std::string &kernel,
                                           const Setup &setup,
                                           std::array<int64_t, 3> grid) {
  TestModule plain(source), lowered(source);
  ASSERT_EQ(lowered.lower(/*streamK=*/true), "");
  ASSERT_TRUE(lowered.kernel(kernel)->hasAttr(
      mlir::tessel::TesselDialect::getWorkspaceAttrName()));
  expectSameRuns(plain, lowered, kernel, setup, grid);
  int flags = lowered.memory.numBuffers() - 1;
  for (int64_t f : lowered.memory.readInts(flags))
    EXPECT_EQ(f, 0) << "a flag was left set";
}

int TestModule::buffer(DType type, size_t n) {
  return memory.allocate(type, n);
}

int TestModule::buffer(DType type, const std::vector<double> &values) {
  int id = memory.allocate(type, values.size());
  memory.write(id, values);
  return id;
}

std::string TestModule::run(const std::string &name,
                            const std::vector<KernelArg> &args,
                            std::array<int64_t, 3> grid) {
  if (!module)
    return "no module: " + diagnostics;
  mlir::func::FuncOp kernel = this->kernel(name);
  if (!kernel)
    return "no kernel " + name;
  std::string error;
  LaunchConfig config;
  config.grid = grid;
  if (mlir::failed(runKernel(kernel, args, config, memory, error)) &&
      error.empty())
    return "failed without a message";
  return error;
}

std::string tessel::test::tileType(const std::vector<int64_t> &shape,
                                   const std::string &elt) {
  std::string text = "!tessel.tile<";
  for (int64_t d : shape)
    text += std::to_string(d) + "x";
  return text + elt + ">";
}

std::string tessel::test::offsets2D(const std::string &name, int64_t rows,
                                    int64_t cols, int64_t stride) {
  std::string r = std::to_string(rows), c = std::to_string(cols);
  std::string n = "%" + name, col = tileType({rows, 1}, "i32");
  std::string row = tileType({1, cols}, "i32"),
              full = tileType({rows, cols}, "i32");
  return "  " + n + "_r = tessel.arange 0, " + r + " : " +
         tileType({rows}, "i32") + "\n  " + n + "_c = tessel.arange 0, " + c +
         " : " + tileType({cols}, "i32") + "\n  " + n + "_k = arith.constant " +
         std::to_string(stride) + " : i32" + "\n  " + n +
         "_ks = tessel.splat " + n + "_k : i32 -> " + col + "\n  " + n +
         "_re = tessel.expand_dims " + n +
         "_r {axis = 1 : i32} : " + tileType({rows}, "i32") + " -> " + col +
         "\n  " + n + "_rm = tessel.binary mul " + n + "_re, " + n +
         "_ks : " + col + "\n  " + n + "_rb = tessel.broadcast " + n +
         "_rm : " + col + " -> " + full + "\n  " + n +
         "_ce = tessel.expand_dims " + n +
         "_c {axis = 0 : i32} : " + tileType({cols}, "i32") + " -> " + row +
         "\n  " + n + "_cb = tessel.broadcast " + n + "_ce : " + row + " -> " +
         full + "\n  " + n + " = tessel.binary add " + n + "_rb, " + n +
         "_cb : " + full + "\n";
}

std::string tessel::test::pointers(const std::string &name,
                                   const std::string &base,
                                   const std::string &offsets,
                                   const std::vector<int64_t> &shape,
                                   const std::string &elt) {
  std::string ptr = "!tessel.ptr<" + elt + ">", tile = tileType(shape, ptr);
  return "  %" + name + "_s = tessel.splat %" + base + " : " + ptr + " -> " +
         tile + "\n  %" + name + " = tessel.addptr %" + name + "_s, %" +
         offsets + " : " + tile + ", " + tileType(shape, "i32") + "\n";
}

void tessel::test::referenceSoftmax(const double *s, const double *v, int rows,
                                    int n, int cols, double *o, double *lse) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int r = 0; r < rows; ++r) {
    double m = -inf, l = 0;
    for (int j = 0; j < n; ++j)
      m = std::max(m, s[r * n + j]);
    for (int c = 0; c < cols; ++c)
      o[r * cols + c] = 0;
    lse[r] = -inf;
    if (m == -inf)
      continue;
    for (int j = 0; j < n; ++j) {
      double p = std::exp(s[r * n + j] - m);
      l += p;
      for (int c = 0; c < cols; ++c)
        o[r * cols + c] += p * v[j * cols + c];
    }
    for (int c = 0; c < cols; ++c)
      o[r * cols + c] /= l;
    lse[r] = m + std::log(l);
  }
}
