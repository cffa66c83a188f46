//===- GpuSmokeTest.cpp - The smoke-test bundles on a real GPU ------------===//
//
// Skipped where Runtime::create() fails (no driver or no device). On a GPU
// machine: TESSEL_RUNTIME_TEST_INPUTS=<repo>/test/Unit/Runtime/Inputs
//   bin/tessel-runtime-gpu-smoke
//
//===----------------------------------------------------------------------===//

#include "tessel/Runtime.h"

#include "TestBundles.h"

#include <gtest/gtest.h>

#include <optional>

using namespace tessel;

namespace {

class GpuSmoke : public ::testing::Test {
protected:
  void SetUp() override {
    Result<std::unique_ptr<Runtime>> created = Runtime::create();
    if (!created.ok())
      FAIL() << created.message(); // Run only where there is a GPU.
    rt = std::move(*created);
  }

  std::optional<Kernel> load(const char *bundle, const char *kernel) {
    Result<Module> module = rt->loadBundle(inputPath(bundle));
    EXPECT_TRUE(module.ok()) << module.message();
    if (!module.ok())
      return std::nullopt;
    Result<Kernel> k = module->kernel(kernel);
    EXPECT_TRUE(k.ok()) << k.message();
    return k.ok() ? std::optional<Kernel>(*k) : std::nullopt;
  }

  DevicePtr upload(const std::vector<float> &host) {
    Result<DevicePtr> ptr = rt->alloc(host.size() * sizeof(float));
    EXPECT_TRUE(ptr.ok()) << ptr.message();
    Status s = rt->copyToDevice(*ptr, host.data(), host.size() * 4);
    EXPECT_TRUE(s.ok()) << s.message();
    return *ptr;
  }

  std::vector<float> download(DevicePtr ptr, size_t n) {
    std::vector<float> host(n);
    Status s = rt->copyToHost(host.data(), ptr, n * sizeof(float));
    EXPECT_TRUE(s.ok()) << s.message();
    return host;
  }

  std::unique_ptr<Runtime> rt;
};

} // namespace

TEST_F(GpuSmoke, VectorAdd) {
  std::optional<Kernel> add = load("vector_add.bundle", "vector_add");
  ASSERT_TRUE(add);
  const int n = (1 << 20) + 3;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i % 1000);
    y[i] = 0.25f * float(i % 7);
  }
  DevicePtr dx = upload(x), dy = upload(y),
            dout = upload(std::vector<float>(n));
  Status s = rt->launch(
      *add, {Arg::ptr(dx), Arg::ptr(dy), Arg::ptr(dout), Arg::i32(n)});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(rt->synchronize().ok());
  std::vector<float> out = download(dout, n);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[i], x[i] + y[i]) << i;

  Result<float> ms = rt->timeMs([&] {
    return rt->launch(
        *add, {Arg::ptr(dx), Arg::ptr(dy), Arg::ptr(dout), Arg::i32(n)});
  });
  ASSERT_TRUE(ms.ok()) << ms.message();
  EXPECT_GT(*ms, 0.f);
  for (DevicePtr p : {dx, dy, dout})
    EXPECT_TRUE(rt->free(p).ok());
}

// Each CTA waits for all others: it completes only if the grid is resident,
// and counts correctly only if the workspace was zeroed before each launch.
TEST_F(GpuSmoke, PersistentSumIsResidentAndZeroed) {
  std::optional<Kernel> sum = load("persistent_sum.bundle", "persistent_sum");
  ASSERT_TRUE(sum);
  for (int n : {5000, 1 << 22, 1 << 22}) {
    DevicePtr dx = upload(std::vector<float>(n, 1.f));
    DevicePtr dout = upload(std::vector<float>(4, -1.f));
    Status s = rt->launch(*sum, {Arg::ptr(dx), Arg::ptr(dout), Arg::i32(n)});
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(rt->synchronize().ok());
    std::vector<float> out = download(dout, 4);
    EXPECT_EQ(out[0], float(n)) << "sum";
    float ctas = out[1];
    if (n == 5000) {
      EXPECT_EQ(ctas, 5.f); // cdiv(5000, 1024)
    }
    EXPECT_GT(ctas, 0.f);
    EXPECT_LE(ctas, float(rt->multiprocessorCount() * 3)); // 64 KiB per CTA
    EXPECT_EQ(out[2], ctas) << "barrier count (workspace not zeroed?)";
    EXPECT_EQ(out[3], 0.f) << "the barrier timed out (grid not resident?)";
    EXPECT_TRUE(rt->free(dx).ok());
    EXPECT_TRUE(rt->free(dout).ok());
  }
}

TEST_F(GpuSmoke, BrokenPtxShowsTheJitLog) {
  std::string kernel = R"json({"name": "k", "ptx_entry": "k", "num_warps": 1,
      "params": [], "launch": {"kind": "grid", "grid": [1]}})json";
  std::string ptx = ".version 8.0 .target sm_90 .address_size 64 "
                    ".visible .entry k() { bogus.instruction; ret; }";
  Result<Module> m = rt->loadBundleFromString(makeBundle(kernel, ptx), "bad");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.message().find("bad: cuModuleLoadDataEx failed: "),
            std::string::npos)
      << m.message();
  EXPECT_NE(m.message().find("JIT log:"), std::string::npos) << m.message();
}
