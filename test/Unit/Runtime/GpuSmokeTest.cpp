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

#include <cstdio>
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

namespace {

/// Kernel `name`(out: i32 pointer) of a version-6 bundle: `members` added to
/// its JSON, `launch` its launch rule's members before "cluster": C; its PTX
/// (one line: no JSON escaping needed), in clusters of C, takes `params` and
/// runs `body`. None (and a test failure) if it does not load.
std::optional<Kernel> loadClusterKernel(Runtime &rt, const std::string &name,
                                        const std::string &members,
                                        const std::string &launch, int cluster,
                                        const std::string &params,
                                        const std::string &body) {
  std::string kernel =
      R"json({"name": ")json" + name + R"json(", "ptx_entry": ")json" + name +
      R"json(", "num_warps": 4, )json" + members +
      R"json("params": [{"name": "out", "kind": "ptr", "elem": "i32"}],
      "launch": {)json" +
      launch + R"json(, "cluster": )json" + std::to_string(cluster) + "}}";
  std::string ptx =
      ".version 8.0 .target sm_90 .address_size 64 .visible .entry " + name +
      "(" + params + ") .reqnctapercluster " + std::to_string(cluster) +
      ", 1, 1 { " + body + " }";
  Result<Module> m = rt.loadBundleFromString(
      makeBundle(kernel, ptx, "sm_90", 6), name + ".bundle");
  EXPECT_TRUE(m.ok()) << m.message();
  if (!m.ok())
    return std::nullopt;
  return *m->kernel(name);
}

} // namespace

// Every CTA records the cluster it runs in: a grid of clusters of C along x.
TEST_F(GpuSmoke, GridClusters) {
  for (int cluster : {2, 16}) {
    std::optional<Kernel> loaded = loadClusterKernel(
        *rt, "who", "", R"json("kind": "grid")json", cluster, ".param .u64 out",
        ".reg .pred %p<2>; .reg .b32 %r<8>; .reg .b64 %rd<4>; "
        "ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1; "
        "mov.u32 %r1, %tid.x; setp.ne.u32 %p1, %r1, 0; @%p1 bra DONE; "
        "mov.u32 %r2, %ctaid.x; mov.u32 %r3, %cluster_nctarank; "
        "mov.u32 %r4, %cluster_ctarank; mul.wide.u32 %rd2, %r2, 8; "
        "add.s64 %rd3, %rd1, %rd2; st.global.v2.u32 [%rd3], {%r3, %r4}; "
        "DONE: ret;");
    ASSERT_TRUE(loaded);
    Kernel who = *loaded;
    const uint32_t ctas = 4 * cluster;
    DevicePtr out = upload(std::vector<float>(2 * ctas, -1.f));
    Status s = rt->launch(who, {Arg::ptr(out)}, Grid{ctas, 1, 1});
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(rt->synchronize().ok());
    std::vector<uint32_t> seen(2 * ctas);
    ASSERT_TRUE(rt->copyToHost(seen.data(), out, seen.size() * 4).ok());
    for (uint32_t i = 0; i < ctas; ++i) {
      EXPECT_EQ(seen[2 * i], uint32_t(cluster)) << "CTA " << i;
      EXPECT_EQ(seen[2 * i + 1], i % cluster) << "CTA " << i;
    }
    EXPECT_EQ(rt->launch(who, {Arg::ptr(out)}, Grid{ctas + 1, 1, 1}).message(),
              "kernel 'who': grid[0] = " + std::to_string(ctas + 1) +
                  " is not a multiple of its cluster size " +
                  std::to_string(cluster));
    EXPECT_TRUE(rt->free(out).ok());
  }
}

// At one CTA per SM (200 KiB of shared memory each) the GPCs hold fewer
// clusters than the SMs suggest; each CTA waits for all others, so this
// completes without timeouts only if the runtime's grid is resident.
TEST_F(GpuSmoke, PersistentClustersAreResident) {
  for (int cluster : {8, 16}) {
    std::optional<Kernel> loaded = loadClusterKernel(
        *rt, "spin", R"json("shared_bytes": 204800, )json",
        R"json("kind": "persistent", "workspace_bytes": 4)json", cluster,
        ".param .u64 out, .param .u64 ws",
        ".reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<8>; "
        "ld.param.u64 %rd1, [ws]; cvta.to.global.u64 %rd1, %rd1; "
        "ld.param.u64 %rd2, [out]; cvta.to.global.u64 %rd2, %rd2; "
        "mov.u32 %r1, %tid.x; setp.ne.u32 %p1, %r1, 0; @%p1 bra DONE; "
        "mov.u32 %r6, %cluster_nctarank; setp.eq.u32 %p3, %r6, " +
            std::to_string(cluster) +
            "; @%p3 bra COUNT; atom.global.add.u32 %r7, [%rd2+4], 1; "
            "COUNT: atom.global.add.u32 %r2, [%rd1], 1; "
            "mov.u32 %r3, %nctaid.x; mov.u64 %rd3, %globaltimer; "
            "LOOP: ld.volatile.global.u32 %r4, [%rd1]; "
            "setp.ge.u32 %p2, %r4, %r3; @%p2 bra DONE; "
            "mov.u64 %rd4, %globaltimer; sub.s64 %rd5, %rd4, %rd3; "
            "setp.lt.s64 %p3, %rd5, 1000000000; @%p3 bra LOOP; "
            "atom.global.add.u32 %r5, [%rd2], 1; DONE: ret;");
    ASSERT_TRUE(loaded);
    Kernel spin = *loaded;
    Result<Grid> grid = rt->launchGrid(spin, {Arg::ptr(0)});
    ASSERT_TRUE(grid.ok()) << grid.message();
    std::printf("clusters of %d: %u CTAs on %d SMs\n", cluster, (*grid)[0],
                rt->multiprocessorCount());
    EXPECT_EQ((*grid)[0] % cluster, 0u);
    EXPECT_GE((*grid)[0], uint32_t(cluster));
    EXPECT_LE((*grid)[0], uint32_t(rt->multiprocessorCount()));
    for (int launch = 0; launch < 2; ++launch) {
      DevicePtr out = upload(std::vector<float>(2, 0.f));
      Status s = rt->launch(spin, {Arg::ptr(out)});
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(rt->synchronize().ok());
      uint32_t counts[2];
      ASSERT_TRUE(rt->copyToHost(counts, out, sizeof(counts)).ok());
      EXPECT_EQ(counts[0], 0u) << "CTAs timed out (grid not resident?)";
      EXPECT_EQ(counts[1], 0u) << "CTAs outside a cluster of " << cluster;
      EXPECT_TRUE(rt->free(out).ok());
    }
  }
}
