//===- RuntimeTest.cpp - The runtime against a missing and a fake driver --===//

#include "tessel/Runtime.h"

#include "FakeCuda.h"
#include "TestBundles.h"

#include <gtest/gtest.h>

#include <optional>

#include <cstring>

using namespace tessel;

static bool startsWith(const std::string &s, const std::string &prefix) {
  return s.rfind(prefix, 0) == 0;
}

TEST(Runtime, MissingDriverIsAClearError) {
  RuntimeOptions options;
  options.driverLibrary = "libtessel-no-such-driver.so.1";
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(options);
  ASSERT_FALSE(rt.ok());
  EXPECT_TRUE(startsWith(rt.message(), "no CUDA driver found "
                                       "(libtessel-no-such-driver.so.1: "))
      << rt.message();
}

// On the CI machine there is no libcuda; on a GPU machine this succeeds.
TEST(Runtime, DefaultDriverLoadsOrExplainsWhyNot) {
  Result<std::unique_ptr<Runtime>> rt = Runtime::create();
  if (rt.ok())
    GTEST_SKIP() << "a CUDA device is present";
  EXPECT_TRUE(
      startsWith(rt.message(), "no CUDA driver found (libcuda.so.1: ") ||
      startsWith(rt.message(), "no CUDA device"))
      << rt.message();
}

TEST(Runtime, LibraryWithoutTheEntryPointsIsRejected) {
  RuntimeOptions options;
  options.driverLibrary = "libm.so.6";
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(options);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(
      rt.message(),
      "the CUDA driver libm.so.6 has no cuGetErrorName (driver too old?)");
}

namespace {

/// Runs the runtime against libTesselFakeCuda.so.
class FakeDriver : public ::testing::Test {
protected:
  void SetUp() override { fake = FakeCudaState(); }

  Result<std::unique_ptr<Runtime>> tryCreate(int device = 0) {
    RuntimeOptions options;
    options.driverLibrary = fakeCudaPath();
    options.device = device;
    return Runtime::create(options);
  }
  std::unique_ptr<Runtime> create() {
    Result<std::unique_ptr<Runtime>> rt = tryCreate();
    EXPECT_TRUE(rt.ok()) << rt.message();
    return rt.ok() ? std::move(*rt) : nullptr;
  }
  std::optional<Kernel> load(Runtime &rt, const std::string &bundle,
                             const char *kernel) {
    Result<Module> module = rt.loadBundle(inputPath(bundle));
    EXPECT_TRUE(module.ok()) << module.message();
    if (!module.ok())
      return std::nullopt;
    Result<Kernel> k = module->kernel(kernel);
    EXPECT_TRUE(k.ok()) << k.message();
    return k.ok() ? std::optional<Kernel>(*k) : std::nullopt;
  }

  /// k(q: f16 pointer, multiple_of 16; n: i32, multiple_of 8), grid (n).
  std::optional<Kernel> loadHinted(Runtime &rt) {
    const char *kernel =
        R"json({"name": "k", "ptx_entry": "k", "num_warps": 4,
  "params": [{"name": "q", "kind": "ptr", "elem": "f16", "multiple_of": 16},
             {"name": "n", "kind": "i32", "multiple_of": 8}],
  "launch": {"kind": "grid", "grid": ["n"]}})json";
    Result<Module> module = rt.loadBundleFromString(
        makeBundle(kernel, makePtx("k", {".u64", ".u32"}), "sm_90", 3), "h");
    EXPECT_TRUE(module.ok()) << module.message();
    if (!module.ok())
      return std::nullopt;
    Result<Kernel> k = module->kernel("k");
    EXPECT_TRUE(k.ok()) << k.message();
    return k.ok() ? std::optional<Kernel>(*k) : std::nullopt;
  }

  FakeCudaState &fake = *fakeCudaState();
};

// The host version of vector_add, run by the fake cuLaunchKernel.
void hostVectorAdd(const FakeLaunch &, void **params) {
  float *x, *y, *out;
  int n;
  std::memcpy(&x, params[0], sizeof(x));
  std::memcpy(&y, params[1], sizeof(y));
  std::memcpy(&out, params[2], sizeof(out));
  std::memcpy(&n, params[3], sizeof(n));
  for (int i = 0; i < n; ++i)
    out[i] = x[i] + y[i];
}

} // namespace

TEST_F(FakeDriver, NoDeviceIsAClearError) {
  fake.initResult = 100;
  EXPECT_EQ(tryCreate().message(),
            "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE (fake description))");
  fake = FakeCudaState();
  fake.deviceCount = 0;
  EXPECT_EQ(tryCreate().message(), "no CUDA device");
  fake = FakeCudaState();
  EXPECT_EQ(tryCreate(3).message(), "CUDA device 3 requested but there are 1");
  fake.failCall = "cuDevicePrimaryCtxRetain";
  EXPECT_EQ(tryCreate().message(),
            "cuDevicePrimaryCtxRetain failed: CUDA_ERROR_ILLEGAL_ADDRESS "
            "(fake description)");
  EXPECT_EQ(fake.releases, 0);
}

TEST_F(FakeDriver, UsesAndReleasesThePrimaryContext) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  EXPECT_EQ(fake.retains, 1);
  EXPECT_EQ(rt->multiprocessorCount(), 4);
  rt.reset();
  EXPECT_EQ(fake.releases, 1);
  EXPECT_EQ(fake.contextDepth, 0);
}

TEST_F(FakeDriver, VectorAddRunsThroughTheWholePath) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> add = load(*rt, "vector_add.bundle", "vector_add");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->name(), "vector_add");
  EXPECT_EQ(add->numWarps(), 8);
  EXPECT_FALSE(add->persistent());
  ASSERT_EQ(add->params().size(), 4u);
  EXPECT_EQ(add->params()[0].elem, "f32");

  const int n = 1000;
  std::vector<float> x(n), y(n), out(n, -1.f);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i);
    y[i] = 0.5f * float(i);
  }
  DevicePtr dx = *rt->alloc(n * 4), dy = *rt->alloc(n * 4),
            dout = *rt->alloc(n * 4);
  ASSERT_TRUE(rt->copyToDevice(dx, x.data(), n * 4).ok());
  ASSERT_TRUE(rt->copyToDevice(dy, y.data(), n * 4).ok());
  ASSERT_TRUE(rt->fill(dout, 0, n * 4).ok());
  fake.kernel = hostVectorAdd;
  Status s = rt->launch(
      *add, {Arg::ptr(dx), Arg::ptr(dy), Arg::ptr(dout), Arg::i32(n)});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(rt->synchronize().ok());
  ASSERT_TRUE(rt->copyToHost(out.data(), dout, n * 4).ok());
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 1.5f * float(i)) << i;

  ASSERT_EQ(fake.launches.size(), 1u);
  const FakeLaunch &launch = fake.launches[0];
  EXPECT_EQ(launch.function, "vector_add");
  EXPECT_EQ(launch.grid[0], 4u); // cdiv(1000, 256)
  EXPECT_EQ(launch.grid[1] * launch.grid[2], 1u);
  EXPECT_EQ(launch.block[0], 256u);
  EXPECT_EQ(launch.sharedBytes, 0u);
  EXPECT_EQ(fake.maxDynamicShared, 0); // 0 bytes needs no attribute
  for (DevicePtr p : {dx, dy, dout})
    EXPECT_TRUE(rt->free(p).ok());
  EXPECT_EQ(fake.liveAllocations, 0);
  EXPECT_EQ(fake.contextDepth, 0);
}

TEST_F(FakeDriver, BadLaunchesFailBeforeTheDriver) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> add = load(*rt, "vector_add.bundle", "vector_add");
  ASSERT_TRUE(add);
  Status s =
      rt->launch(*add, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i64(5)});
  EXPECT_EQ(s.message(),
            "kernel 'vector_add': argument 3 ('n') must be i32, got i64");
  // n = 0: an empty grid launches nothing.
  s = rt->launch(*add, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i32(0)});
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(fake.launches.empty());
}

TEST_F(FakeDriver, BrokenHintsNeverReachTheDriver) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> k = loadHinted(*rt);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->params()[0].multipleOf, 16);
  const std::string badN = "kernel 'k': argument 'n' = 12 is not a multiple "
                           "of 8 (multiple_of in the kernel source)";
  EXPECT_EQ(rt->launch(*k, {Arg::ptr(0x1000), Arg::i32(12)}).message(), badN);
  EXPECT_EQ(
      rt->launch(*k, {Arg::ptr(0x1000), Arg::i32(12)}, {1, 1, 1}).message(),
      badN);
  EXPECT_EQ(rt->launchGrid(*k, {Arg::ptr(0x1000), Arg::i32(12)}).message(),
            badN);
  EXPECT_EQ(rt->launch(*k, {Arg::ptr(0x1008), Arg::i32(16)}).message(),
            "kernel 'k': argument 'q' = 0x1008 is not 16-byte aligned "
            "(multiple_of in the kernel source)");
  EXPECT_TRUE(fake.launches.empty());
  Status s = rt->launch(*k, {Arg::ptr(0x1010), Arg::i32(16)});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(fake.launches.size(), 1u);
  EXPECT_EQ(fake.launches[0].grid[0], 16u);
}

TEST_F(FakeDriver, DriverErrorsNameTheKernelAndTheCall) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> add = load(*rt, "vector_add.bundle", "vector_add");
  ASSERT_TRUE(add);
  fake.failCall = "cuLaunchKernel";
  Status s =
      rt->launch(*add, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i32(5)});
  EXPECT_EQ(s.message(), "kernel 'vector_add': cuLaunchKernel failed: "
                         "CUDA_ERROR_ILLEGAL_ADDRESS (fake description)");
  EXPECT_EQ(fake.contextDepth, 0);

  fake.failCall = "cuStreamSynchronize";
  EXPECT_EQ(rt->synchronize().message(),
            "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (fake "
            "description)");
  fake.failCall = "cuMemAlloc_v2";
  fake.failResult = 2;
  EXPECT_EQ(
      rt->alloc(64).message(),
      "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (fake description)");
  fake.failResult = 12345; // a code this driver has no name for
  EXPECT_EQ(rt->alloc(64).message(), "cuMemAlloc_v2 failed: CUresult 12345");
}

TEST_F(FakeDriver, ModulesAreCachedByPtx) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  load(*rt, "vector_add.bundle", "vector_add");
  load(*rt, "vector_add.bundle", "vector_add");
  std::string text = readInput("vector_add.bundle");
  ASSERT_TRUE(rt->loadBundleFromString(text).ok());
  EXPECT_EQ(fake.moduleLoads, 1);
  load(*rt, "persistent_sum.bundle", "persistent_sum");
  EXPECT_EQ(fake.moduleLoads, 2);
  rt.reset();
  EXPECT_EQ(fake.moduleUnloads, 2);
}

TEST_F(FakeDriver, JitErrorLogIsSurfaced) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::string ptx = makePtx("k", {}) + " // " + kFakeJitError;
  std::string kernel = R"json({"name": "k", "ptx_entry": "k", "num_warps": 1,
      "params": [], "launch": {"kind": "grid", "grid": [1]}})json";
  Result<Module> m = rt->loadBundleFromString(makeBundle(kernel, ptx), "j.b");
  EXPECT_EQ(m.message(), "j.b: cuModuleLoadDataEx failed: "
                         "CUDA_ERROR_INVALID_PTX (fake description)\n"
                         "JIT log:\nptxas fatal: fake");
  EXPECT_EQ(fake.contextDepth, 0);
}

TEST_F(FakeDriver, KernelLookupAndOwnership) {
  std::unique_ptr<Runtime> rt = create(), other = create();
  ASSERT_TRUE(rt && other);
  Result<Module> m = rt->loadBundle(inputPath("vector_add.bundle"));
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->kernels().size(), 1u);
  EXPECT_EQ(m->kernel("nope").message(), "no kernel 'nope' in " +
                                             inputPath("vector_add.bundle") +
                                             " (it has vector_add)");
  Status s = other->launch(*m->kernel("vector_add"), {});
  EXPECT_EQ(s.message(),
            "kernel 'vector_add': it was loaded by another Runtime");
}

TEST_F(FakeDriver, TargetMustSuitTheDevice) {
  fake.ccMajor = 8;
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::string path = inputPath("vector_add.bundle");
  EXPECT_EQ(rt->loadBundle(path).message(),
            path + ": the bundle targets sm_90 but the device is sm_80");
  fake.ccMajor = 10;
  rt = create();
  EXPECT_TRUE(rt->loadBundle(path).ok()); // PTX JIT-compiles forward
  std::string kernel = R"json({"name": "k", "ptx_entry": "k", "num_warps": 1,
      "params": [], "launch": {"kind": "grid", "grid": [1]}})json";
  EXPECT_EQ(rt->loadBundleFromString(
                  makeBundle(kernel, makePtx("k", {}), "sm_90a"), "a.b")
                .message(),
            "a.b: the bundle targets sm_90a but the device is sm_100");
}

TEST_F(FakeDriver, LargeSharedMemoryRaisesTheLimit) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> sum =
      load(*rt, "persistent_sum.bundle", "persistent_sum");
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->sharedBytes(), 65536u);
  EXPECT_EQ(fake.maxDynamicShared, 65536);

  fake.sharedOptin = 50000;
  rt = create();
  EXPECT_EQ(rt->loadBundle(inputPath("persistent_sum.bundle")).message(),
            "kernel 'persistent_sum': needs 65536 bytes of shared memory; the "
            "device allows 50000 per block");
  fake = FakeCudaState();
  fake.failCall = "cuFuncSetAttribute";
  rt = create();
  EXPECT_EQ(rt->loadBundle(inputPath("persistent_sum.bundle")).message(),
            "kernel 'persistent_sum': cuFuncSetAttribute failed: "
            "CUDA_ERROR_ILLEGAL_ADDRESS (fake description)");
}

TEST_F(FakeDriver, PersistentLaunchZeroesAndAppendsTheWorkspace) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> sum =
      load(*rt, "persistent_sum.bundle", "persistent_sum");
  ASSERT_TRUE(sum);
  EXPECT_TRUE(sum->persistent());
  std::vector<uint64_t> workspaces;
  int dirtyWorkspaces = 0;
  // Checks the workspace is zero, then dirties it as a kernel would.
  fake.kernel = [&](const FakeLaunch &launch, void **params) {
    unsigned char *ws;
    std::memcpy(&ws, params[3], sizeof(ws));
    size_t bytes = 16 + 4 * launch.grid[0];
    for (size_t i = 0; i < bytes; ++i)
      dirtyWorkspaces += ws[i] != 0;
    std::memset(ws, 0xff, bytes);
    workspaces.push_back(reinterpret_cast<uint64_t>(ws));
  };
  auto launch = [&](int n) {
    Status s = rt->launch(*sum, {Arg::ptr(0), Arg::ptr(0), Arg::i32(n)});
    EXPECT_TRUE(s.ok()) << s.message();
  };
  Result<Grid> grid =
      rt->launchGrid(*sum, {Arg::ptr(0), Arg::ptr(0), Arg::i32(1 << 20)});
  ASSERT_TRUE(grid.ok()) << grid.message();
  EXPECT_EQ(*grid, (Grid{8, 1, 1}));
  EXPECT_EQ(rt->launchGrid(*sum, {Arg::ptr(0)}).message(),
            "kernel 'persistent_sum' takes 3 arguments (x: ptr, out: ptr, "
            "n: i32), got 1");
  launch(3000);    // max_ctas = cdiv(3000, 1024) = 3
  launch(1 << 20); // capped at 4 SMs x occupancy 2
  launch(1 << 20);
  ASSERT_EQ(fake.launches.size(), 3u);
  EXPECT_EQ(fake.launches[0].grid[0], 3u);
  EXPECT_EQ(fake.launches[1].grid[0], 8u);
  EXPECT_EQ(fake.launches[1].block[0], 256u);
  EXPECT_EQ(fake.launches[1].sharedBytes, 65536u);
  EXPECT_EQ(dirtyWorkspaces, 0);
  EXPECT_EQ(fake.memsets, 3);
  EXPECT_EQ(workspaces[1], workspaces[2]); // kept once grown
  EXPECT_EQ(fake.liveAllocations, 1);
  rt.reset();
  EXPECT_EQ(fake.liveAllocations, 0);
}

TEST_F(FakeDriver, PerSizeWorkspaceIsZeroedOncePerSize) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::string text = replaceAll(readInput("persistent_sum.bundle"),
                                "\"version\": 1", "\"version\": 5");
  text = replaceAll(text, "\"workspace_bytes\": \"16 + 4 * num_ctas\"",
                    "\"workspace_bytes\": \"16 + 4 * num_ctas\", "
                    "\"workspace_zeroing\": \"per_size\"");
  Result<Module> module = rt->loadBundleFromString(text, "sum");
  ASSERT_TRUE(module.ok()) << module.message();
  Result<Kernel> sum = module->kernel("persistent_sum");
  ASSERT_TRUE(sum.ok()) << sum.message();
  int dirty = 0;
  // A well-behaved kernel: it finds the workspace zeroed and leaves it so.
  fake.kernel = [&](const FakeLaunch &launch, void **params) {
    unsigned char *ws;
    std::memcpy(&ws, params[3], sizeof(ws));
    for (size_t i = 0, e = 16 + 4 * launch.grid[0]; i < e; ++i)
      dirty += ws[i] != 0;
  };
  auto launch = [&](int n) {
    Status s = rt->launch(*sum, {Arg::ptr(0), Arg::ptr(0), Arg::i32(n)});
    EXPECT_TRUE(s.ok()) << s.message();
  };
  launch(1 << 20); // 8 CTAs: allocated and zeroed
  launch(1 << 20);
  EXPECT_EQ(fake.memsets, 1);
  launch(3000); // 3 CTAs: the counters move, zeroed again
  EXPECT_EQ(fake.memsets, 2);
  launch(1 << 20);
  launch(1 << 20);
  EXPECT_EQ(fake.memsets, 3);
  EXPECT_EQ(dirty, 0);
  ASSERT_EQ(fake.launches.size(), 5u);
}

TEST_F(FakeDriver, FollowUpRunsRightAfterOnTheSameWorkspace) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  Result<Module> module = rt->loadBundleFromString(makeFollowUpBundle(), "s");
  ASSERT_TRUE(module.ok()) << module.message();
  Result<Kernel> k = module->kernel("k"),
                 combine = module->kernel("k__combine");
  ASSERT_TRUE(k.ok() && combine.ok());
  // Each launch sees the previous one's workspace: the split kernel a zeroed
  // one, the combine kernel what the split kernel left.
  std::vector<std::pair<std::string, uint64_t>> seen;
  fake.kernel = [&](const FakeLaunch &launch, void **params) {
    uint64_t *ws;
    std::memcpy(&ws, params[2], sizeof(ws));
    seen.emplace_back(launch.function, ws[0]);
    ws[0] = 42;
  };
  Status s = rt->launch(*k, {Arg::ptr(0), Arg::i32(5)});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(fake.launches.size(), 2u);
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, uint64_t>>{
                      {"k", 0}, {"k__combine", 42}}));
  EXPECT_EQ(fake.memsets, 1);
  for (const FakeLaunch &launch : fake.launches)
    EXPECT_EQ(launch.grid[0], 8u); // 4 SMs x occupancy 2, of the split kernel
  EXPECT_EQ(fake.launches[0].block[0], 128u);
  EXPECT_EQ(fake.launches[1].block[0], 256u);
  EXPECT_EQ(fake.launches[1].sharedBytes, 1024u);

  EXPECT_EQ(rt->launch(*combine, {Arg::ptr(0), Arg::i32(5)}).message(),
            "kernel 'k__combine': it runs as the 'then' of kernel 'k'; launch "
            "'k'");
  fake.failCall = "cuLaunchKernel";
  EXPECT_EQ(rt->launch(*k, {Arg::ptr(0), Arg::i32(5)}).message(),
            "kernel 'k': cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS "
            "(fake description)");
  EXPECT_EQ(fake.launches.size(), 2u);
}

TEST_F(FakeDriver, Timing) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  int calls = 0;
  Result<float> ms = rt->timeMs([&] {
    ++calls;
    return Status();
  });
  ASSERT_TRUE(ms.ok()) << ms.message();
  EXPECT_EQ(*ms, 2.5f);
  EXPECT_EQ(calls, 1);
  ms = rt->timeMs([] { return Status::error("work failed"); });
  EXPECT_EQ(ms.message(), "work failed");
  EXPECT_EQ(fake.liveEvents, 0);
  EXPECT_EQ(fake.contextDepth, 0);
}

TEST_F(FakeDriver, PreparedLaunchPacksWhatLaunchPacks) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> add = load(*rt, "vector_add.bundle", "vector_add");
  ASSERT_TRUE(add);
  const int n = 300;
  std::vector<float> x(n, 1.f), y(n, 2.f), out(n);
  DevicePtr dx = *rt->alloc(n * 4), dy = *rt->alloc(n * 4),
            dout = *rt->alloc(n * 4);
  ASSERT_TRUE(rt->copyToDevice(dx, x.data(), n * 4).ok());
  ASSERT_TRUE(rt->copyToDevice(dy, y.data(), n * 4).ok());
  Stream stream = reinterpret_cast<Stream>(0x5150);
  ASSERT_TRUE(
      rt->launch(*add,
                 {Arg::ptr(dx), Arg::ptr(dy), Arg::ptr(dout), Arg::i32(n)},
                 stream)
          .ok());
  Result<PreparedLaunch> prepared =
      rt->prepare(*add, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i32(n)});
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  EXPECT_EQ(prepared->kernel().name(), "vector_add");
  EXPECT_EQ(prepared->pointerParams(), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(prepared->grid(), (Grid{2, 1, 1})); // cdiv(300, 256)
  fake.kernel = hostVectorAdd;
  const DevicePtr pointers[] = {dx, dy, dout};
  Status s = prepared->launch(pointers, stream);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(rt->copyToHost(out.data(), dout, n * 4).ok());
  EXPECT_EQ(out[0], 3.f);
  EXPECT_EQ(out[n - 1], 3.f);

  ASSERT_EQ(fake.launches.size(), 2u);
  const FakeLaunch &slow = fake.launches[0], &fast = fake.launches[1];
  EXPECT_EQ(fast.function, slow.function);
  EXPECT_EQ(fast.stream, stream);
  EXPECT_EQ(fast.stream, slow.stream);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(fast.grid[i], slow.grid[i]);
    EXPECT_EQ(fast.block[i], slow.block[i]);
  }
  EXPECT_EQ(fast.sharedBytes, slow.sharedBytes);
  ASSERT_EQ(slow.args.size(), 4u);
  EXPECT_EQ(slow.args[2].size(), 8u);
  EXPECT_EQ(slow.args[3].size(), 4u);
  EXPECT_EQ(fast.args, slow.args);
  for (DevicePtr p : {dx, dy, dout})
    EXPECT_TRUE(rt->free(p).ok());
  EXPECT_EQ(fake.contextDepth, 0);
}

TEST_F(FakeDriver, PreparedLaunchKeepsNonePointersNull) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  const char *kernel =
      R"json({"name": "k", "ptx_entry": "k", "num_warps": 4,
  "params": [{"name": "o", "kind": "ptr", "elem": "f16"},
             {"name": "lse", "kind": "ptr", "elem": "f32", "none": true},
             {"name": "x", "kind": "ptr", "elem": "f16"}],
  "launch": {"kind": "grid", "grid": [1]}})json";
  Result<Module> module = rt->loadBundleFromString(
      makeBundle(kernel, makePtx("k", {".u64", ".u64", ".u64"}), "sm_90", 7),
      "none");
  ASSERT_TRUE(module.ok()) << module.message();
  Result<Kernel> k = module->kernel("k");
  ASSERT_TRUE(k.ok()) << k.message();
  Result<PreparedLaunch> prepared =
      rt->prepare(*k, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0)});
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  // Only the buffers a call passes: the None pointer stays null.
  EXPECT_EQ(prepared->pointerParams(), (std::vector<uint32_t>{0, 2}));
  const DevicePtr pointers[] = {0x1000, 0x3000};
  Status s = prepared->launch(pointers);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(fake.launches.size(), 1u);
  const std::vector<std::string> &args = fake.launches[0].args;
  ASSERT_EQ(args.size(), 3u);
  uint64_t words[3];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(args[i].size(), 8u);
    std::memcpy(&words[i], args[i].data(), 8);
  }
  EXPECT_EQ(words[0], 0x1000u);
  EXPECT_EQ(words[1], 0u);
  EXPECT_EQ(words[2], 0x3000u);
}

TEST_F(FakeDriver, PreparedLaunchChecksPointerHintsAtEachLaunch) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> k = loadHinted(*rt);
  ASSERT_TRUE(k);
  EXPECT_EQ(rt->prepare(*k, {Arg::ptr(0), Arg::i32(12)}).message(),
            "kernel 'k': argument 'n' = 12 is not a multiple of 8 "
            "(multiple_of in the kernel source)");
  Result<PreparedLaunch> prepared = rt->prepare(*k, {Arg::ptr(0), Arg::i32(8)});
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  const DevicePtr misaligned[] = {0x1008}, aligned[] = {0x1010};
  EXPECT_FALSE(prepared->pointersFit(misaligned));
  EXPECT_TRUE(prepared->pointersFit(aligned));
  EXPECT_EQ(prepared->launch(misaligned).message(),
            "kernel 'k': argument 'q' = 0x1008 is not 16-byte aligned "
            "(multiple_of in the kernel source)");
  EXPECT_TRUE(fake.launches.empty());
  ASSERT_TRUE(prepared->launch(aligned).ok());
  ASSERT_EQ(fake.launches.size(), 1u);
  EXPECT_EQ(fake.launches[0].args[0], std::string("\x10\x10\0\0\0\0\0\0", 8));
}

TEST_F(FakeDriver, PreparedLaunchesOfPersistentKernels) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> sum =
      load(*rt, "persistent_sum.bundle", "persistent_sum");
  ASSERT_TRUE(sum);
  Result<PreparedLaunch> prepared =
      rt->prepare(*sum, {Arg::ptr(0), Arg::ptr(0), Arg::i32(1 << 20)});
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  EXPECT_EQ(prepared->grid(), (Grid{8, 1, 1})); // 4 SMs x occupancy 2
  EXPECT_EQ(
      rt->prepare(*sum, {Arg::ptr(0), Arg::ptr(0), Arg::i32(1)}, Grid{1, 1, 1})
          .message(),
      "kernel 'persistent_sum': a persistent kernel sizes its own grid; "
      "launch it without one");
  const DevicePtr pointers[] = {0x100, 0x200};
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(prepared->launch(pointers).ok());
  ASSERT_TRUE(
      rt->launch(*sum, {Arg::ptr(0x100), Arg::ptr(0x200), Arg::i32(1 << 20)})
          .ok());
  ASSERT_EQ(fake.launches.size(), 3u);
  EXPECT_EQ(fake.memsets, 3); // the workspace is zeroed for every launch
  ASSERT_EQ(fake.launches[0].args.size(), 4u); // + the workspace
  EXPECT_EQ(fake.launches[0].args, fake.launches[2].args);

  Result<Module> split = rt->loadBundleFromString(makeFollowUpBundle(), "s");
  ASSERT_TRUE(split.ok()) << split.message();
  EXPECT_EQ(
      rt->prepare(*split->kernel("k__combine"), {Arg::ptr(0), Arg::i32(5)})
          .message(),
      "kernel 'k__combine': it runs as the 'then' of kernel 'k'; launch "
      "'k'");
  Result<PreparedLaunch> withThen =
      rt->prepare(*split->kernel("k"), {Arg::ptr(0), Arg::i32(5)});
  ASSERT_TRUE(withThen.ok()) << withThen.message();
  fake.launches.clear();
  ASSERT_TRUE(withThen->launch(pointers).ok());
  ASSERT_EQ(fake.launches.size(), 2u);
  EXPECT_EQ(fake.launches[1].function, "k__combine");
}

TEST_F(FakeDriver, PreparedLaunchEdgeCases) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::optional<Kernel> add = load(*rt, "vector_add.bundle", "vector_add");
  ASSERT_TRUE(add);
  EXPECT_EQ(rt->prepare(*add, {Arg::ptr(0)}).message(),
            "kernel 'vector_add' takes 4 arguments (x: ptr, y: ptr, out: ptr, "
            "n: i32), got 1");
  // n = 0: an empty grid launches nothing.
  Result<PreparedLaunch> empty =
      rt->prepare(*add, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i32(0)});
  ASSERT_TRUE(empty.ok()) << empty.message();
  const DevicePtr pointers[] = {16, 32, 48};
  EXPECT_TRUE(empty->launch(pointers).ok());
  EXPECT_TRUE(fake.launches.empty());

  Result<PreparedLaunch> prepared =
      rt->prepare(*add, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i32(5)});
  ASSERT_TRUE(prepared.ok());
  PreparedLaunch moved = std::move(*prepared);
  fake.failCall = "cuLaunchKernel";
  EXPECT_EQ(moved.launch(pointers).message(),
            "kernel 'vector_add': cuLaunchKernel failed: "
            "CUDA_ERROR_ILLEGAL_ADDRESS (fake description)");
  EXPECT_EQ(fake.contextDepth, 0);
  std::unique_ptr<Runtime> other = create();
  EXPECT_EQ(
      other->prepare(*add, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i32(5)})
          .message(),
      "kernel 'vector_add': it was loaded by another Runtime");
}

namespace {

/// The runtime with attention_fwd of makeTensorMapBundle() loaded.
class FakeDriverTensorMaps : public FakeDriver {
protected:
  void SetUp() override {
    FakeDriver::SetUp();
    rt = create();
    ASSERT_TRUE(rt);
    Result<Module> module =
        rt->loadBundleFromString(makeTensorMapBundle(), "tma.bundle");
    ASSERT_TRUE(module.ok()) << module.message();
    Result<Kernel> k = module->kernel("attention_fwd");
    ASSERT_TRUE(k.ok()) << k.message();
    kernel = *k;
  }

  static std::vector<Arg> args(uint64_t q, uint64_t k, int32_t n = 1000,
                               int64_t skn = 80, int32_t H = 4) {
    return {Arg::ptr(q), Arg::ptr(k),   Arg::ptr(0x7f0000000004),
            Arg::i32(n), Arg::i64(skn), Arg::i32(H)};
  }
  Status launch(uint64_t q, uint64_t k, int32_t n = 1000) {
    return rt->launch(*kernel, args(q, k, n));
  }

  /// The bytes the fake encodes for its encoding number `serial` of the
  /// tensor at `address`.
  static std::string mapBytes(uint64_t serial, uint64_t address) {
    uint64_t opaque[16] = {serial, address};
    return std::string(reinterpret_cast<const char *>(opaque), 128);
  }

  std::unique_ptr<Runtime> rt;
  std::optional<Kernel> kernel;
};

constexpr uint64_t kQ = 0x7f0000000000, kK = 0x7f0000100000;

} // namespace

TEST_F(FakeDriverTensorMaps, EncodedFromTheLaunchAndPassedAfterTheArguments) {
  // Each map's parameter is 64-byte aligned storage, as the driver reads it.
  std::vector<bool> aligned;
  fake.kernel = [&](const FakeLaunch &, void **params) {
    for (int i : {6, 7})
      aligned.push_back(reinterpret_cast<uintptr_t>(params[i]) % 64 == 0);
  };
  Status s = launch(kQ, kK);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(fake.tensorMapEncodes.size(), 2u);
  const FakeTensorMapEncode &k = fake.tensorMapEncodes[0];
  EXPECT_EQ(k.dataType, 9); // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  EXPECT_EQ(k.rank, 3u);
  EXPECT_EQ(k.address, kK);
  EXPECT_EQ(k.dims, (std::vector<uint64_t>{64, 1000, 2}));
  EXPECT_EQ(k.strides, (std::vector<uint64_t>{160, 160000})); // bytes
  EXPECT_EQ(k.box, (std::vector<uint32_t>{64, 64, 1}));
  EXPECT_EQ(k.elementStrides, (std::vector<uint32_t>{1, 1, 1}));
  EXPECT_EQ(k.interleave, 0);  // CU_TENSOR_MAP_INTERLEAVE_NONE
  EXPECT_EQ(k.swizzle, 3);     // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(k.l2Promotion, 3); // CU_TENSOR_MAP_L2_PROMOTION_L2_256B
  EXPECT_EQ(k.oobFill, 0);     // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros
  const FakeTensorMapEncode &q = fake.tensorMapEncodes[1];
  EXPECT_EQ(q.dataType, 6); // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
  EXPECT_EQ(q.rank, 2u);
  EXPECT_EQ(q.address, kQ);
  EXPECT_EQ(q.dims, (std::vector<uint64_t>{64, 1000}));
  EXPECT_EQ(q.strides, (std::vector<uint64_t>{128}));
  EXPECT_EQ(q.swizzle, 0); // CU_TENSOR_MAP_SWIZZLE_NONE

  // The arguments, the maps in bundle order, then the workspace pointer.
  ASSERT_EQ(fake.launches.size(), 1u);
  const std::vector<std::string> &params = fake.launches[0].args;
  ASSERT_EQ(params.size(), 9u);
  EXPECT_EQ(params[1], std::string(reinterpret_cast<const char *>(&kK), 8));
  EXPECT_EQ(params[6], mapBytes(1, kK));
  EXPECT_EQ(params[7], mapBytes(2, kQ));
  EXPECT_EQ(params[8].size(), 8u);
  EXPECT_NE(params[8], std::string(8, '\0')); // the workspace
  EXPECT_EQ(fake.memsets, 1);
  EXPECT_EQ(aligned, (std::vector<bool>{true, true}));

  // Swizzle spans map to their modes.
  for (auto [bytes, mode] : {std::pair<int, int>{32, 1}, {64, 2}}) {
    std::string maps = R"json([{"param": "k", "dims": ["D"], "strides": [],
        "box": [16], "swizzle": )json" +
                       std::to_string(bytes) + "}]";
    Result<Module> m =
        rt->loadBundleFromString(makeTensorMapBundle(maps, 1), "s.bundle");
    ASSERT_TRUE(m.ok()) << m.message();
    ASSERT_TRUE(rt->launch(*m->kernel("attention_fwd"), args(kQ, kK)).ok());
    EXPECT_EQ(fake.tensorMapEncodes.back().swizzle, mode) << bytes;
  }
}

TEST_F(FakeDriverTensorMaps, RepeatedLaunchesReuseTheEncodedMaps) {
  ASSERT_TRUE(launch(kQ, kK).ok());
  ASSERT_TRUE(launch(kQ, kK).ok());
  EXPECT_EQ(fake.tensorMapEncodes.size(), 2u);
  ASSERT_EQ(fake.launches.size(), 2u);
  EXPECT_EQ(fake.launches[1].args, fake.launches[0].args);
  // A new pointer: its map only.
  ASSERT_TRUE(launch(kQ, kK + 0x100).ok());
  ASSERT_EQ(fake.tensorMapEncodes.size(), 3u);
  EXPECT_EQ(fake.tensorMapEncodes[2].address, kK + 0x100);
  EXPECT_EQ(fake.launches[2].args[6], mapBytes(3, kK + 0x100));
  EXPECT_EQ(fake.launches[2].args[7], mapBytes(2, kQ));
  // New dims: both (n is in both).
  ASSERT_TRUE(launch(kQ, kK, 2000).ok());
  EXPECT_EQ(fake.tensorMapEncodes.size(), 5u);
  EXPECT_EQ(fake.tensorMapEncodes[4].dims, (std::vector<uint64_t>{64, 2000}));
  // Earlier values are still known.
  ASSERT_TRUE(launch(kQ, kK).ok());
  ASSERT_TRUE(launch(kQ, kK + 0x100).ok());
  EXPECT_EQ(fake.tensorMapEncodes.size(), 5u);
  EXPECT_EQ(fake.launches.back().args[6], mapBytes(3, kK + 0x100));
}

TEST_F(FakeDriverTensorMaps, TheCacheIsBounded) {
  // 4096 maps cached (q's and 4095 of k's), then one more: it starts over.
  for (uint64_t i = 0; i < 4095; ++i)
    ASSERT_TRUE(launch(kQ, kK + 16 * i).ok());
  EXPECT_EQ(fake.tensorMapEncodes.size(), 4096u);
  ASSERT_TRUE(launch(kQ, kK).ok()); // still cached
  EXPECT_EQ(fake.tensorMapEncodes.size(), 4096u);
  // The new map of k empties the cache, so q's is encoded again too.
  ASSERT_TRUE(launch(kQ, kK + 16 * 4095).ok());
  EXPECT_EQ(fake.tensorMapEncodes.size(), 4098u);
  ASSERT_TRUE(launch(kQ, kK).ok()); // forgotten
  EXPECT_EQ(fake.tensorMapEncodes.size(), 4099u);
}

TEST_F(FakeDriverTensorMaps, PreparedLaunchesEncodeOnlyWhatChanged) {
  ASSERT_TRUE(launch(kQ, kK).ok());
  Result<PreparedLaunch> prepared = rt->prepare(*kernel, args(0, 0));
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  EXPECT_EQ(fake.tensorMapEncodes.size(), 2u); // placeholders: nothing yet
  EXPECT_EQ(prepared->pointerParams(), (std::vector<uint32_t>{0, 1, 2}));
  const uint64_t o = 0x7f0000000004;
  const DevicePtr pointers[] = {kQ, kK, o};
  ASSERT_TRUE(prepared->launch(pointers).ok());
  EXPECT_EQ(fake.tensorMapEncodes.size(), 2u); // the launch's, cached
  ASSERT_EQ(fake.launches.size(), 2u);
  EXPECT_EQ(fake.launches[1].args, fake.launches[0].args);

  // New bases: encoded once, then reused.
  const DevicePtr moved[] = {kQ + 0x40, kK, o + 8};
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(prepared->launch(moved).ok());
  ASSERT_EQ(fake.tensorMapEncodes.size(), 3u);
  EXPECT_EQ(fake.tensorMapEncodes[2].address, kQ + 0x40);
  EXPECT_EQ(fake.launches.back().args[6], mapBytes(1, kK));
  EXPECT_EQ(fake.launches.back().args[7], mapBytes(3, kQ + 0x40));
  // Back: from the cache.
  ASSERT_TRUE(prepared->launch(pointers).ok());
  EXPECT_EQ(fake.tensorMapEncodes.size(), 3u);
  EXPECT_EQ(fake.launches.back().args, fake.launches[0].args);

  // A misaligned base is refused before anything is enqueued.
  const DevicePtr misaligned[] = {kQ, kK + 8, o};
  EXPECT_FALSE(prepared->pointersFit(misaligned));
  EXPECT_TRUE(prepared->pointersFit(moved));
  size_t launches = fake.launches.size();
  EXPECT_EQ(prepared->launch(misaligned).message(),
            "kernel 'attention_fwd': argument 'k' = 0x7f0000100008 is not "
            "16-byte aligned (its tensor map needs it)");
  EXPECT_EQ(fake.launches.size(), launches);
  EXPECT_EQ(fake.memsets, int(launches));
}

TEST_F(FakeDriverTensorMaps, ErrorsComeBeforeAnythingIsEnqueued) {
  EXPECT_EQ(launch(kQ, kK + 8).message(),
            "kernel 'attention_fwd': argument 'k' = 0x7f0000100008 is not "
            "16-byte aligned (its tensor map needs it)");
  EXPECT_EQ(rt->launch(*kernel, args(kQ, kK, 1000, 100)).message(),
            "kernel 'attention_fwd': tensor map of 'k': stride 'skn' = 100 "
            "elements (200 bytes) is not a multiple of 16 bytes");
  EXPECT_EQ(rt->prepare(*kernel, args(0, 0, 1000, 100)).message(),
            "kernel 'attention_fwd': tensor map of 'k': stride 'skn' = 100 "
            "elements (200 bytes) is not a multiple of 16 bytes");
  fake.failCall = "cuTensorMapEncodeTiled";
  EXPECT_EQ(launch(kQ, kK).message(),
            "kernel 'attention_fwd': tensor map of 'k': cuTensorMapEncodeTiled "
            "failed: CUDA_ERROR_ILLEGAL_ADDRESS (fake description) (address "
            "0x7f0000100000, dims [64, 1000, 2], byte strides [160, 160000], "
            "box [64, 64, 1], swizzle 128)");
  Result<PreparedLaunch> prepared = rt->prepare(*kernel, args(0, 0));
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  const DevicePtr pointers[] = {kQ, kK, 0};
  EXPECT_EQ(prepared->launch(pointers).message().rfind(
                "kernel 'attention_fwd': tensor map of 'k': "
                "cuTensorMapEncodeTiled failed",
                0),
            0u);
  EXPECT_TRUE(fake.launches.empty());
  EXPECT_EQ(fake.memsets, 0);
  EXPECT_EQ(fake.contextDepth, 0);
  // A failed encoding is not kept: the next launch encodes.
  fake.failCall.clear();
  ASSERT_TRUE(prepared->launch(pointers).ok());
  EXPECT_EQ(fake.tensorMapEncodes.size(), 2u);
  EXPECT_EQ(fake.launches[0].args[6], mapBytes(1, kK));
}

TEST_F(FakeDriver, FollowUpsReceiveTheTensorMaps) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  Result<Module> module =
      rt->loadBundleFromString(makeFollowUpBundleWithMaps(), "s");
  ASSERT_TRUE(module.ok()) << module.message();
  const uint64_t x = 0x7f0000000100;
  ASSERT_TRUE(
      rt->launch(*module->kernel("k"), {Arg::ptr(x), Arg::i32(5)}).ok());
  ASSERT_EQ(fake.launches.size(), 2u);
  ASSERT_EQ(fake.tensorMapEncodes.size(), 1u);
  EXPECT_EQ(fake.tensorMapEncodes[0].dims, std::vector<uint64_t>{5});
  for (const FakeLaunch &launch : fake.launches) {
    ASSERT_EQ(launch.args.size(), 4u) << launch.function;
    EXPECT_EQ(launch.args[2].size(), 128u);
    EXPECT_EQ(launch.args[2].substr(8, 8),
              std::string(reinterpret_cast<const char *>(&x), 8));
  }
  EXPECT_EQ(fake.launches[1].args, fake.launches[0].args);
}

/// On a driver too old for some kernels, a plain one still loads and runs.
static void expectPlainKernelRuns(Runtime &rt) {
  Result<Module> plain = rt.loadBundle(inputPath("vector_add.bundle"));
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_TRUE(rt.launch(*plain->kernel("vector_add"),
                        {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i32(5)})
                  .ok());
}

TEST_F(FakeDriver, DriversWithoutTensorMapsRunTheOtherKernels) {
  RuntimeOptions options;
  options.driverLibrary = fakeOldCudaPath();
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(options);
  ASSERT_TRUE(rt.ok()) << rt.message();
  expectPlainKernelRuns(**rt);
  Result<Module> maps =
      (*rt)->loadBundleFromString(makeTensorMapBundle(), "tma.bundle");
  ASSERT_TRUE(maps.ok()) << maps.message();
  Status s = (*rt)->launch(*maps->kernel("attention_fwd"),
                           {Arg::ptr(kQ), Arg::ptr(kK), Arg::ptr(0),
                            Arg::i32(1000), Arg::i64(80), Arg::i32(4)});
  EXPECT_EQ(s.message(),
            "kernel 'attention_fwd': tensor map of 'k': the CUDA driver has no "
            "cuTensorMapEncodeTiled (driver too old: tensor maps need CUDA 12 "
            "or newer)");
}

namespace {

/// A version-6 bundle of k(x: f32 ptr, n: i32) with the launch rule
/// `launch`; `workspace`: its PTX takes the workspace pointer too.
std::string clusterBundle(const std::string &launch, bool workspace = false) {
  std::string kernel =
      R"json({"name": "k", "ptx_entry": "k", "num_warps": 4,
  "params": [{"name": "x", "kind": "ptr", "elem": "f32"}, {"name": "n", "kind": "i32"}],
  "launch": )json" +
      launch + "}";
  std::string ptx = workspace ? makePtx("k", {".u64", ".u32", ".u64"})
                              : makePtx("k", {".u64", ".u32"});
  return makeBundle(kernel, ptx, "sm_90", 6);
}

std::vector<unsigned> clusterOf(const FakeLaunch &launch) {
  return {std::begin(launch.cluster), std::end(launch.cluster)};
}

} // namespace

TEST_F(FakeDriver, ClusterLaunchesCarryTheClusterDimension) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  Result<Module> m = rt->loadBundleFromString(
      clusterBundle(R"json({"kind": "grid", "grid": ["n"], "cluster": 4})json"),
      "c");
  ASSERT_TRUE(m.ok()) << m.message();
  Kernel k = *m->kernel("k");
  EXPECT_EQ(k.cluster(), 4);
  EXPECT_EQ(fake.nonPortableClusters, 0);   // 4 is a portable size
  EXPECT_TRUE(fake.clusterQueries.empty()); // only persistent grids need it
  Status s = rt->launch(k, {Arg::ptr(0x100), Arg::i32(8)});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(fake.launches.size(), 1u);
  EXPECT_EQ(fake.launches[0].grid[0], 8u);
  EXPECT_EQ(fake.launches[0].block[0], 128u);
  EXPECT_EQ(clusterOf(fake.launches[0]), (std::vector<unsigned>{4, 1, 1}));
  ASSERT_EQ(fake.launches[0].args.size(), 2u);
  EXPECT_EQ(fake.launches[0].args[1], std::string("\x08\0\0\0", 4));
  EXPECT_EQ(rt->launch(k, {Arg::ptr(0x100), Arg::i32(6)}).message(),
            "kernel 'k': grid[0] = 6 is not a multiple of its cluster size 4");
  EXPECT_EQ(fake.launches.size(), 1u);

  Result<PreparedLaunch> prepared = rt->prepare(k, {Arg::ptr(0), Arg::i32(12)});
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  const DevicePtr pointers[] = {0x100};
  ASSERT_TRUE(prepared->launch(pointers).ok());
  ASSERT_EQ(fake.launches.size(), 2u);
  EXPECT_EQ(fake.launches[1].grid[0], 12u);
  EXPECT_EQ(clusterOf(fake.launches[1]), (std::vector<unsigned>{4, 1, 1}));

  fake.failCall = "cuLaunchKernelEx";
  EXPECT_EQ(rt->launch(k, {Arg::ptr(0x100), Arg::i32(8)}).message(),
            "kernel 'k': cuLaunchKernelEx failed: CUDA_ERROR_ILLEGAL_ADDRESS "
            "(fake description)");
  EXPECT_EQ(fake.contextDepth, 0);
  // Kernels without clusters launch with cuLaunchKernel.
  std::optional<Kernel> add = load(*rt, "vector_add.bundle", "vector_add");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->cluster(), 1);
  s = rt->launch(*add, {Arg::ptr(0), Arg::ptr(0), Arg::ptr(0), Arg::i32(5)});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(clusterOf(fake.launches.back()), (std::vector<unsigned>{1, 1, 1}));
}

TEST_F(FakeDriver, PersistentClustersFitTheDevice) {
  // An H200 at one CTA per SM: 132 SMs, 7 clusters of 16.
  fake.smCount = 132;
  fake.occupancy = 1;
  fake.maxActiveClusters = 7;
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  const std::string bundle = clusterBundle(
      R"json({"kind": "persistent", "cluster": 16, "workspace_bytes": "16 * num_ctas"})json",
      true);
  Result<Module> m = rt->loadBundleFromString(bundle, "c");
  ASSERT_TRUE(m.ok()) << m.message();
  Kernel k = *m->kernel("k");
  EXPECT_EQ(fake.nonPortableClusters, 1); // 16 is above the portable 8
  ASSERT_EQ(fake.clusterQueries.size(), 1u);
  const FakeLaunch &query = fake.clusterQueries[0];
  EXPECT_EQ(query.function, "k");
  EXPECT_EQ(query.grid[0], 16u);
  EXPECT_EQ(query.block[0], 128u);
  EXPECT_EQ(query.sharedBytes, 0u);
  EXPECT_EQ(clusterOf(query), (std::vector<unsigned>{16, 1, 1}));
  EXPECT_EQ(*rt->launchGrid(k, {Arg::ptr(0), Arg::i32(1)}), (Grid{112, 1, 1}));
  ASSERT_TRUE(rt->launch(k, {Arg::ptr(0), Arg::i32(1)}).ok());
  ASSERT_EQ(fake.launches.size(), 1u);
  EXPECT_EQ(fake.launches[0].grid[0], 112u);
  EXPECT_EQ(clusterOf(fake.launches[0]), (std::vector<unsigned>{16, 1, 1}));

  fake.maxActiveClusters = 0;
  rt = create();
  m = rt->loadBundleFromString(bundle, "c");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(rt->launch(*m->kernel("k"), {Arg::ptr(0), Arg::i32(1)}).message(),
            "kernel 'k': no cluster of 16 CTAs of 128 threads with 0 bytes of "
            "shared memory fits on the device");
  fake.failCall = "cuOccupancyMaxActiveClusters";
  rt = create();
  EXPECT_EQ(rt->loadBundleFromString(bundle, "c").message(),
            "kernel 'k': cuOccupancyMaxActiveClusters failed: "
            "CUDA_ERROR_ILLEGAL_ADDRESS (fake description)");
}

TEST_F(FakeDriver, FollowUpsLaunchInTheirOwnClusters) {
  std::unique_ptr<Runtime> rt = create();
  ASSERT_TRUE(rt);
  std::string text =
      replaceAll(makeFollowUpBundle(), "\"version\": 2", "\"version\": 6");
  const std::string kind = "\"kind\": \"persistent\", ";
  size_t leader = text.find(kind) + kind.size();
  text.insert(leader, "\"cluster\": 4, ");
  text.insert(text.find(kind, leader) + kind.size(), "\"cluster\": 2, ");
  Result<Module> m = rt->loadBundleFromString(text, "s");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->kernel("k")->cluster(), 4);
  ASSERT_TRUE(rt->launch(*m->kernel("k"), {Arg::ptr(0), Arg::i32(5)}).ok());
  ASSERT_EQ(fake.launches.size(), 2u);
  EXPECT_EQ(fake.launches[0].grid[0], 8u); // 4 SMs x 2, 2 clusters of 4
  EXPECT_EQ(clusterOf(fake.launches[0]), (std::vector<unsigned>{4, 1, 1}));
  EXPECT_EQ(fake.launches[1].function, "k__combine");
  EXPECT_EQ(fake.launches[1].grid[0], 8u);
  EXPECT_EQ(clusterOf(fake.launches[1]), (std::vector<unsigned>{2, 1, 1}));
}

TEST_F(FakeDriver, DriversWithoutClusterLaunchesRunTheOtherKernels) {
  RuntimeOptions options;
  options.driverLibrary = fakeOldCudaPath();
  Result<std::unique_ptr<Runtime>> rt = Runtime::create(options);
  ASSERT_TRUE(rt.ok()) << rt.message();
  const std::string tooOld =
      "kernel 'k': the CUDA driver has no cuLaunchKernelEx (driver too old: "
      "thread-block clusters need CUDA 12 or newer)";
  for (const std::string &launch :
       {std::string(R"json({"kind": "grid", "grid": ["n"], "cluster": 2})json"),
        std::string(R"json({"kind": "persistent", "cluster": 2})json")}) {
    Result<Module> m =
        (*rt)->loadBundleFromString(clusterBundle(launch), "c.bundle");
    ASSERT_TRUE(m.ok()) << m.message();
    EXPECT_EQ(
        (*rt)->launch(*m->kernel("k"), {Arg::ptr(0), Arg::i32(2)}).message(),
        tooOld);
  }
  expectPlainKernelRuns(**rt);
}
