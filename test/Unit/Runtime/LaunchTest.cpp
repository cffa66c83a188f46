//===- LaunchTest.cpp - Arguments and launch dimensions -------------------===//

#include "Runtime/Launch.h"

#include "TestBundles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace tessel;

// A kernel k(x: ptr, B: i32, H: i32, N: i64, scale: f32) with 4 warps, 1 KiB
// of shared memory and the given launch rule, in a bundle of `version`.
static KernelInfo kernelWith(const std::string &launch, int version = 1) {
  std::string kernel =
      R"json({"name": "k", "ptx_entry": "k", "num_warps": 4, "shared_bytes": 1024,
  "params": [{"name": "x", "kind": "ptr", "elem": "f16"},
             {"name": "B", "kind": "i32"}, {"name": "H", "kind": "i32"},
             {"name": "N", "kind": "i64"}, {"name": "scale", "kind": "f32"}],
  "launch": )json" +
      launch + "}";
  bool workspace = launch.find("workspace_bytes") != std::string::npos;
  std::string ptx =
      workspace ? makePtx("k", {".u64", ".u32", ".u32", ".u64", ".f32", ".u64"})
                : makePtx("k", {".u64", ".u32", ".u32", ".u64", ".f32"});
  Result<Bundle> b =
      parseBundle(makeBundle(kernel, ptx, "sm_90", version), "k.bundle");
  EXPECT_TRUE(b.ok()) << b.message();
  return b.ok() ? b->kernels[0] : KernelInfo();
}

static std::vector<Arg> args(int32_t B, int32_t H, int64_t N) {
  return {Arg::ptr(0x1000), Arg::i32(B), Arg::i32(H), Arg::i64(N),
          Arg::f32(0.125f)};
}

static std::string planError(const KernelInfo &k, const std::vector<Arg> &a,
                             int numSMs = 132, int blocksPerSM = 2) {
  Result<LaunchPlan> plan = planLaunch(k, a, numSMs, blocksPerSM);
  EXPECT_FALSE(plan.ok());
  return plan.ok() ? "" : plan.message();
}

TEST(Args, CountMismatchShowsTheSignature) {
  KernelInfo k = kernelWith(R"json({"kind": "grid", "grid": [1]})json");
  EXPECT_EQ(checkArgs(k, {Arg::ptr(0), Arg::i32(1)}).message(),
            "kernel 'k' takes 5 arguments (x: ptr, B: i32, H: i32, N: i64, "
            "scale: f32), got 2");
}

TEST(Args, KindMismatchNamesTheParameter) {
  KernelInfo k = kernelWith(R"json({"kind": "grid", "grid": [1]})json");
  std::vector<Arg> a = args(1, 1, 1);
  EXPECT_TRUE(checkArgs(k, a).ok());
  a[3] = Arg::i32(1);
  EXPECT_EQ(checkArgs(k, a).message(),
            "kernel 'k': argument 3 ('N') must be i64, got i32");
  a = args(1, 1, 1);
  a[0] = Arg::f32(0);
  EXPECT_EQ(checkArgs(k, a).message(),
            "kernel 'k': argument 0 ('x') must be ptr, got f32");
}

// attention_fwd(q: ptr, sqn: i32, n: i64, m: i32) with multiple_of hints on q
// (16 bytes), sqn (8) and n (64).
static KernelInfo hintedKernel() {
  const char *kernel =
      R"json({"name": "attention_fwd", "ptx_entry": "attention_fwd", "num_warps": 4,
  "params": [{"name": "q", "kind": "ptr", "elem": "f16", "multiple_of": 16},
             {"name": "sqn", "kind": "i32", "multiple_of": 8},
             {"name": "n", "kind": "i64", "multiple_of": 64},
             {"name": "m", "kind": "i32"}],
  "launch": {"kind": "grid", "grid": [1]}})json";
  Result<Bundle> b = parseBundle(
      makeBundle(kernel,
                 makePtx("attention_fwd", {".u64", ".u32", ".u64", ".u32"}),
                 "sm_90", 3),
      "k.bundle");
  EXPECT_TRUE(b.ok()) << b.message();
  return b.ok() ? b->kernels[0] : KernelInfo();
}

TEST(Args, NonePointersTakeNull) {
  const char *kernel =
      R"json({"name": "k", "ptx_entry": "k", "num_warps": 4,
  "params": [{"name": "o", "kind": "ptr", "elem": "f16"},
             {"name": "lse", "kind": "ptr", "elem": "f32", "none": true}],
  "launch": {"kind": "grid", "grid": [1]}})json";
  Result<Bundle> b = parseBundle(
      makeBundle(kernel, makePtx("k", {".u64", ".u64"}), "sm_90", 7), "k");
  ASSERT_TRUE(b.ok()) << b.message();
  const KernelInfo &k = b->kernels[0];
  EXPECT_TRUE(checkArgs(k, {Arg::ptr(0x1000), Arg::ptr(0)}).ok());
  std::string expected = "kernel 'k': argument 'lse' = 0x2000: the kernel was "
                         "compiled with it None; pass a null pointer (or "
                         "compile it with a buffer)";
  EXPECT_EQ(checkArgs(k, {Arg::ptr(0x1000), Arg::ptr(0x2000)}).message(),
            expected);
  EXPECT_EQ(planError(k, {Arg::ptr(0x1000), Arg::ptr(0x2000)}), expected);
}

TEST(Args, MultipleOfHintsAreChecked) {
  KernelInfo k = hintedKernel();
  // Zero and negative multiples keep a hint; unhinted m takes anything.
  for (const std::vector<Arg> &good :
       {std::vector<Arg>{Arg::ptr(0x7f0000000010), Arg::i32(104),
                         Arg::i64(int64_t(1) << 40), Arg::i32(3)},
        std::vector<Arg>{Arg::ptr(0), Arg::i32(0), Arg::i64(-128),
                         Arg::i32(-1)}}) {
    Status s = checkArgs(k, good);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  const std::pair<std::vector<Arg>, std::string> cases[] = {
      {{Arg::ptr(0x7f0000000010), Arg::i32(100), Arg::i64(64), Arg::i32(3)},
       "kernel 'attention_fwd': argument 'sqn' = 100 is not a multiple of 8 "
       "(multiple_of in the kernel source)"},
      {{Arg::ptr(0x7f0000000010), Arg::i32(-4), Arg::i64(64), Arg::i32(3)},
       "kernel 'attention_fwd': argument 'sqn' = -4 is not a multiple of 8 "
       "(multiple_of in the kernel source)"},
      {{Arg::ptr(0x7f0000000002), Arg::i32(8), Arg::i64(64), Arg::i32(3)},
       "kernel 'attention_fwd': argument 'q' = 0x7f0000000002 is not 16-byte "
       "aligned (multiple_of in the kernel source)"},
      {{Arg::ptr(0x7f0000000018), Arg::i32(8), Arg::i64(64), Arg::i32(3)},
       "kernel 'attention_fwd': argument 'q' = 0x7f0000000018 is not 16-byte "
       "aligned (multiple_of in the kernel source)"},
      {{Arg::ptr(0), Arg::i32(8), Arg::i64((int64_t(1) << 40) + 32),
        Arg::i32(3)},
       "kernel 'attention_fwd': argument 'n' = 1099511627808 is not a "
       "multiple of 64 (multiple_of in the kernel source)"},
  };
  for (const auto &[bad, expected] : cases) {
    EXPECT_EQ(checkArgs(k, bad).message(), expected);
    // Every launch plan checks the arguments first.
    EXPECT_EQ(planError(k, bad), expected);
  }
}

TEST(Launch, GridFromScalarArguments) {
  KernelInfo k = kernelWith(
      R"json({"kind": "grid", "grid": ["cdiv(N, 128)", "B * H"]})json");
  Result<LaunchPlan> plan = planLaunch(k, args(2, 3, 1000), 132, 2);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->grid[0], 8u);
  EXPECT_EQ(plan->grid[1], 6u);
  EXPECT_EQ(plan->grid[2], 1u);
  EXPECT_EQ(plan->blockThreads, 128u);
  EXPECT_EQ(plan->sharedBytes, 1024u);
  EXPECT_EQ(plan->workspaceBytes, 0u);
  EXPECT_FALSE(plan->empty());
  EXPECT_TRUE(planLaunch(k, args(2, 3, 0), 132, 2)->empty());
}

TEST(Launch, GridErrorsNameKernelAndExpression) {
  KernelInfo k =
      kernelWith(R"json({"kind": "grid", "grid": ["B - H", 1]})json");
  EXPECT_EQ(planError(k, args(1, 2, 0)),
            "kernel 'k': grid[0]: 'B - H' = -1, outside [0, 2147483647]");
  k = kernelWith(R"json({"kind": "grid", "grid": [1, "B * H"]})json");
  EXPECT_EQ(planError(k, args(1000, 1000, 0)),
            "kernel 'k': grid[1]: 'B * H' = 1000000, outside [0, 65535]");
  k = kernelWith(R"json({"kind": "grid", "grid": ["N / B"]})json");
  EXPECT_EQ(planError(k, args(0, 1, 10)),
            "kernel 'k': grid[0]: 'N / B': division by zero");
  EXPECT_EQ(planError(k, {Arg::ptr(0)}).rfind("kernel 'k' takes 5", 0), 0u);
}

TEST(Launch, PersistentGridIsBoundedByResidency) {
  KernelInfo k = kernelWith(R"json({"kind": "persistent"})json");
  Result<LaunchPlan> plan = planLaunch(k, args(2, 3, 0), 132, 2);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->grid[0], 264u);
  EXPECT_EQ(plan->grid[1], 1u);

  k = kernelWith(R"json({"kind": "persistent", "max_ctas": "B * H"})json");
  EXPECT_EQ(planLaunch(k, args(2, 3, 0), 132, 2)->grid[0], 6u);
  EXPECT_EQ(planLaunch(k, args(200, 3, 0), 132, 2)->grid[0], 264u);
  EXPECT_TRUE(planLaunch(k, args(0, 3, 0), 132, 2)->empty());

  // More CTAs per SM than fit would let spin-waiting CTAs starve the rest.
  k = kernelWith(R"json({"kind": "persistent", "ctas_per_sm": 1})json");
  EXPECT_EQ(planLaunch(k, args(1, 1, 0), 132, 2)->grid[0], 132u);
  k = kernelWith(R"json({"kind": "persistent", "ctas_per_sm": 4})json");
  EXPECT_EQ(planLaunch(k, args(1, 1, 0), 132, 2)->grid[0], 264u);
  EXPECT_EQ(planError(k, args(1, 1, 0), 132, 0),
            "kernel 'k': no CTA of 128 threads with 1024 bytes of shared "
            "memory fits on an SM");
}

TEST(Launch, WorkspaceSizeMayUseNumCtas) {
  KernelInfo k = kernelWith(
      R"json({"kind": "persistent", "workspace_bytes": "16 + 4 * num_ctas"})json");
  Result<LaunchPlan> plan = planLaunch(k, args(1, 1, 0), 132, 2);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->workspaceBytes, 16u + 4 * 264);
  k = kernelWith(R"json({"kind": "grid", "grid": ["B", "H"],
                     "workspace_bytes": "num_ctas * N"})json");
  EXPECT_EQ(planLaunch(k, args(3, 5, 8), 132, 2)->workspaceBytes, 120u);
  k = kernelWith(
      R"json({"kind": "grid", "grid": [2], "workspace_bytes": "B"})json");
  EXPECT_EQ(planError(k, args(-1, 1, 1)),
            "kernel 'k': workspace_bytes: 'B' = -1, outside [0, "
            "9223372036854775807]");
}

TEST(Launch, FollowUpKeepsTheGridAndWorkspace) {
  Result<Bundle> b = parseBundle(makeFollowUpBundle(), "b");
  ASSERT_TRUE(b.ok()) << b.message();
  Result<LaunchPlan> plan =
      planLaunch(b->kernels[0], {Arg::ptr(0), Arg::i32(5)}, 132, 2);
  ASSERT_TRUE(plan.ok()) << plan.message();
  LaunchPlan next = planFollowUp(b->kernels[1], *plan);
  EXPECT_EQ(next.grid[0], 264u);
  EXPECT_EQ(next.workspaceBytes, 16u * 264);
  EXPECT_EQ(next.blockThreads, 256u);
  EXPECT_EQ(next.sharedBytes, 1024u);
  EXPECT_EQ(plan->blockThreads, 128u);
}

/// A kernel with kernelWith's signature in clusters of `cluster` CTAs, its
/// launch rule `launch` with the cluster member added.
static KernelInfo clusterKernel(std::string launch, int cluster) {
  launch.insert(launch.find('{') + 1,
                "\"cluster\": " + std::to_string(cluster) + ", ");
  return kernelWith(launch, 6);
}

TEST(Clusters, PersistentGridsAreWholeClusters) {
  // 132 SMs x 1 CTA per SM, rounded down to whole clusters.
  for (auto [cluster, ctas] : {std::pair{16, 128u}, std::pair{8, 128u},
                               std::pair{4, 132u}, std::pair{1, 132u}}) {
    KernelInfo k = clusterKernel(R"json({"kind": "persistent"})json", cluster);
    Result<LaunchPlan> plan = planLaunch(k, args(1, 1, 0), 132, 1);
    ASSERT_TRUE(plan.ok()) << plan.message();
    EXPECT_EQ(plan->grid[0], ctas) << cluster;
    EXPECT_EQ(plan->grid[1] * plan->grid[2], 1u);
    EXPECT_EQ(plan->cluster, unsigned(cluster));
  }
  KernelInfo k = clusterKernel(R"json({"kind": "persistent"})json", 16);
  EXPECT_EQ(planLaunch(k, args(1, 1, 0), 132, 2)->grid[0], 256u);
  // Clusters share a GPC: an H200 holds 7 clusters of 16 at one CTA per SM.
  EXPECT_EQ(planLaunch(k, args(1, 1, 0), 132, 1, nullptr, 7)->grid[0], 112u);
  EXPECT_EQ(planLaunch(k, args(1, 1, 0), 132, 1, nullptr, 100)->grid[0], 128u);
  // Kernels without clusters ignore the count.
  k = kernelWith(R"json({"kind": "persistent"})json");
  EXPECT_EQ(planLaunch(k, args(1, 1, 0), 132, 1, nullptr, 7)->grid[0], 132u);
  EXPECT_EQ(planLaunch(k, args(1, 1, 0), 132, 1)->cluster, 1u);
}

TEST(Clusters, MaxCtasBoundsThenRounds) {
  KernelInfo k = clusterKernel(
      R"json({"kind": "persistent", "max_ctas": "B * H"})json", 8);
  EXPECT_EQ(planLaunch(k, args(5, 10, 0), 132, 1)->grid[0], 48u); // 50
  EXPECT_EQ(planLaunch(k, args(8, 1, 0), 132, 1)->grid[0], 8u);
  EXPECT_EQ(planLaunch(k, args(200, 3, 0), 132, 1)->grid[0], 128u);
  EXPECT_EQ(planLaunch(k, args(200, 3, 0), 132, 1, nullptr, 15)->grid[0], 120u);
  EXPECT_TRUE(planLaunch(k, args(0, 3, 0), 132, 1)->empty());
  // Fewer CTAs than one cluster: rounding down would drop the work, rounding
  // up exceed the bound.
  EXPECT_EQ(planError(k, args(1, 5, 0), 132, 1),
            "kernel 'k': max_ctas 'B * H' = 5 is less than its cluster size 8");
  k = clusterKernel(
      R"json({"kind": "persistent", "max_ctas": "B", "ctas_per_sm": 1})json",
      4);
  EXPECT_EQ(planLaunch(k, args(1000, 1, 0), 132, 2)->grid[0], 132u);
}

TEST(Clusters, TooFewCtasFitForACluster) {
  KernelInfo k = clusterKernel(R"json({"kind": "persistent"})json", 16);
  EXPECT_EQ(planError(k, args(1, 1, 0), 4, 2),
            "kernel 'k': a cluster of 16 CTAs of 128 threads with 1024 bytes "
            "of shared memory does not fit: the device holds 8 at once (4 SMs "
            "x 2 per SM)");
  Result<LaunchPlan> plan = planLaunch(k, args(1, 1, 0), 132, 1, nullptr, 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.message(), "kernel 'k': no cluster of 16 CTAs of 128 threads "
                            "with 1024 bytes of shared memory fits on the "
                            "device");
  EXPECT_EQ(planError(k, args(1, 1, 0), 132, 0),
            "kernel 'k': no CTA of 128 threads with 1024 bytes of shared "
            "memory fits on an SM");
}

TEST(Clusters, GridsAreMultiplesOfTheClusterSize) {
  KernelInfo k =
      clusterKernel(R"json({"kind": "grid", "grid": ["B", "H"]})json", 4);
  Result<LaunchPlan> plan = planLaunch(k, args(8, 3, 0), 132, 2);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->grid[0], 8u);
  EXPECT_EQ(plan->grid[1], 3u);
  EXPECT_EQ(plan->cluster, 4u);
  EXPECT_TRUE(planLaunch(k, args(0, 3, 0), 132, 2)->empty());
  EXPECT_EQ(planError(k, args(6, 3, 0)),
            "kernel 'k': grid[0] = 6 is not a multiple of its cluster size 4");
  // A caller's grid too; only x is clustered.
  Grid grid = {12, 5, 3};
  EXPECT_TRUE(planLaunch(k, args(8, 3, 0), 132, 2, &grid).ok());
  grid = {10, 4, 1};
  plan = planLaunch(k, args(8, 3, 0), 132, 2, &grid);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.message(),
            "kernel 'k': grid[0] = 10 is not a multiple of its cluster size 4");
}

TEST(Clusters, AFollowUpRunsInItsOwnClusters) {
  std::string text =
      replaceAll(makeFollowUpBundle(), "\"version\": 2", "\"version\": 6");
  const std::string kind = "\"kind\": \"persistent\", ";
  text.insert(text.find(kind) + kind.size(), "\"cluster\": 4, ");
  Result<Bundle> b = parseBundle(text, "b");
  ASSERT_TRUE(b.ok()) << b.message();
  Result<LaunchPlan> plan =
      planLaunch(b->kernels[0], {Arg::ptr(0), Arg::i32(5)}, 131, 1);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->grid[0], 128u);
  EXPECT_EQ(plan->cluster, 4u);
  LaunchPlan next = planFollowUp(b->kernels[1], *plan);
  EXPECT_EQ(next.grid[0], 128u);
  EXPECT_EQ(next.cluster, 1u);
}

static uint16_t bits16(const Arg &a) {
  uint16_t bits;
  std::memcpy(&bits, a.data(), sizeof(bits));
  return bits;
}

TEST(Arg, HalfPrecisionRoundsToNearestEven) {
  EXPECT_EQ(bits16(Arg::f16(1.0f)), 0x3c00);
  EXPECT_EQ(bits16(Arg::f16(-2.0f)), 0xc000);
  EXPECT_EQ(bits16(Arg::f16(0.1f)), 0x2e66);
  EXPECT_EQ(bits16(Arg::f16(65504.0f)), 0x7bff);
  EXPECT_EQ(bits16(Arg::f16(65519.0f)), 0x7bff);
  EXPECT_EQ(bits16(Arg::f16(65520.0f)), 0x7c00);
  EXPECT_EQ(bits16(Arg::f16(1.0f + 1.0f / 2048)), 0x3c00); // tie: even
  EXPECT_EQ(bits16(Arg::f16(1.0f + 3.0f / 2048)), 0x3c02); // tie: even
  EXPECT_EQ(bits16(Arg::f16(5.9604645e-8f)), 0x0001);      // 2^-24
  EXPECT_EQ(bits16(Arg::f16(6.0975552e-5f)), 0x03ff);      // largest subnormal
  EXPECT_EQ(bits16(Arg::f16(1e-9f)), 0x0000);
  EXPECT_EQ(bits16(Arg::f16(-0.0f)), 0x8000);
  EXPECT_EQ(bits16(Arg::f16(INFINITY)), 0x7c00);
  EXPECT_EQ(bits16(Arg::f16(NAN)) & 0x7e00, 0x7e00);
}

TEST(Arg, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(bits16(Arg::bf16(1.0f)), 0x3f80);
  EXPECT_EQ(bits16(Arg::bf16(-3.0f)), 0xc040);
  EXPECT_EQ(bits16(Arg::bf16(1.00390625f)), 0x3f80); // tie: even
  EXPECT_EQ(bits16(Arg::bf16(1.01171875f)), 0x3f82); // tie: even
  EXPECT_EQ(bits16(Arg::bf16(NAN)) & 0x7fc0, 0x7fc0);
}

TEST(Arg, ScalarsAndPointers) {
  EXPECT_EQ(Arg::i32(-5).intValue(), -5);
  EXPECT_EQ(Arg::i64(int64_t(1) << 40).intValue(), int64_t(1) << 40);
  EXPECT_EQ(Arg::ptr(0xdeadbeef).kind(), ArgKind::Ptr);
  uint64_t p;
  std::memcpy(&p, Arg::ptr(0xdeadbeef).data(), sizeof(p));
  EXPECT_EQ(p, 0xdeadbeefu);
  EXPECT_EQ(argKindSize(ArgKind::BF16), 2u);
  EXPECT_STREQ(argKindName(ArgKind::BF16), "bf16");
}

// A bundle may leave the grid to the caller, as Triton's kernel[grid] does.
TEST(Grid, CallerGivenGrid) {
  KernelInfo k = kernelWith(R"json({"kind": "grid"})json");
  EXPECT_EQ(planError(k, args(2, 3, 4)),
            "kernel 'k': its bundle has no grid formula; give the grid at "
            "launch");
  Grid grid = {7, 2, 1};
  Result<LaunchPlan> plan = planLaunch(k, args(2, 3, 4), 132, 2, &grid);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->grid[0], 7u);
  EXPECT_EQ(plan->grid[1], 2u);
  EXPECT_EQ(plan->grid[2], 1u);
  grid = {1, 70000, 1};
  plan = planLaunch(k, args(2, 3, 4), 132, 2, &grid);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.message(), "kernel 'k': grid[1] = 70000 exceeds 65535");
}

TEST(Grid, CallerGridOverridesTheFormula) {
  KernelInfo k = kernelWith(R"json({"kind": "grid", "grid": ["B*H"]})json");
  Grid grid = {5, 1, 1};
  Result<LaunchPlan> plan = planLaunch(k, args(2, 3, 4), 132, 2, &grid);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->grid[0], 5u);
}

TEST(Grid, PersistentKernelsRefuseACallerGrid) {
  KernelInfo k = kernelWith(R"json({"kind": "persistent"})json");
  Grid grid = {5, 1, 1};
  Result<LaunchPlan> plan = planLaunch(k, args(2, 3, 4), 132, 2, &grid);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.message(), "kernel 'k': a persistent kernel sizes its own "
                            "grid; launch it without one");
}

namespace {

/// attention_fwd of makeTensorMapBundle(maps, ptxMaps).
KernelInfo tensorMapKernel(const std::string &maps = kTestTensorMaps,
                           int ptxMaps = 2) {
  Result<Bundle> b =
      parseBundle(makeTensorMapBundle(maps, ptxMaps), "tma.bundle");
  EXPECT_TRUE(b.ok()) << b.message();
  return b.ok() ? b->kernels[0] : KernelInfo();
}

std::vector<Arg> tensorMapArgs(int32_t n, int64_t skn, int32_t H,
                               uint64_t k = 0x7f0000001000) {
  return {Arg::ptr(0x7f0000000000),
          Arg::ptr(k),
          Arg::ptr(0x7f0000000004),
          Arg::i32(n),
          Arg::i64(skn),
          Arg::i32(H)};
}

std::vector<uint64_t> dims(const TensorMapShape &shape) {
  return {std::begin(shape.dims), std::end(shape.dims)};
}
std::vector<uint64_t> strides(const TensorMapShape &shape) {
  return {std::begin(shape.strides), std::end(shape.strides)};
}

} // namespace

TEST(TensorMaps, DimsAndByteStridesFromArgumentsAndGrid) {
  KernelInfo k = tensorMapKernel();
  Result<LaunchPlan> plan = planLaunch(k, tensorMapArgs(1000, 80, 4), 132, 2);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->grid[1], 8u); // 2 * H
  ASSERT_EQ(plan->tensorMaps.size(), 2u);
  // k (bf16): D, n, grid_y / H; strides skn and skn * n elements of 2 bytes.
  EXPECT_EQ(dims(plan->tensorMaps[0]),
            (std::vector<uint64_t>{64, 1000, 2, 0, 0}));
  EXPECT_EQ(strides(plan->tensorMaps[0]),
            (std::vector<uint64_t>{160, 160000, 0, 0}));
  // q (f16): D, n; stride D.
  EXPECT_EQ(dims(plan->tensorMaps[1]),
            (std::vector<uint64_t>{64, 1000, 0, 0, 0}));
  EXPECT_EQ(strides(plan->tensorMaps[1]),
            (std::vector<uint64_t>{128, 0, 0, 0}));

  // The grid names are the grid the launch uses, the caller's included.
  Grid grid = {3, 12, 1};
  plan = planLaunch(k, tensorMapArgs(1000, 80, 4), 132, 2, &grid);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->tensorMaps[0].dims[2], 3u);
  // An empty dim (2 / 4 = 0) is encoded as 1: the kernel reads nothing of it.
  grid = {1, 2, 1};
  plan = planLaunch(k, tensorMapArgs(1000, 80, 4), 132, 2, &grid);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->tensorMaps[0].dims[2], 1u);
  // Nothing launches on an empty grid: no maps.
  plan = planLaunch(k, tensorMapArgs(0, 80, 4), 132, 2);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_TRUE(plan->empty());
  EXPECT_TRUE(plan->tensorMaps.empty());
}

TEST(TensorMaps, PersistentGridNames) {
  std::string text = makeTensorMapBundle(
      R"json([{"param": "q", "dims": ["D", "grid_x * grid_y * grid_z"], "strides": ["D"], "box": [64, 32]}])json",
      1);
  const std::string from =
      R"json({"kind": "grid", "grid": ["cdiv(n, 64)", "2 * H"], )json";
  text.replace(text.find(from), from.size(),
               R"json({"kind": "persistent", )json");
  Result<Bundle> b = parseBundle(text, "p.bundle");
  ASSERT_TRUE(b.ok()) << b.message();
  Result<LaunchPlan> plan =
      planLaunch(b->kernels[0], tensorMapArgs(1000, 80, 4), 132, 2);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->tensorMaps[0].dims[1], 264u); // the grid sized by occupancy
}

TEST(TensorMaps, ErrorsNameKernelMapAndValue) {
  KernelInfo k = tensorMapKernel();
  const std::string map = "kernel 'attention_fwd': tensor map of 'k': ";
  EXPECT_EQ(planError(k, tensorMapArgs(1000, 100, 4)),
            map + "stride 'skn' = 100 elements (200 bytes) is not a multiple "
                  "of 16 bytes");
  EXPECT_EQ(planError(k, tensorMapArgs(1000, -8, 4)),
            map + "stride 'skn' = -8 elements (-16 bytes) is outside [0, 2^40) "
                  "bytes");
  EXPECT_EQ(planError(k, tensorMapArgs(1000, int64_t(1) << 39, 4)),
            map + "stride 'skn' = 549755813888 elements (1099511627776 bytes) "
                  "is outside [0, 2^40) bytes");
  EXPECT_EQ(planError(k, tensorMapArgs(1, int64_t(1) << 62, 4)),
            map + "stride 'skn' = 4611686018427387904 elements is outside "
                  "[0, 2^40) bytes");
  EXPECT_EQ(planError(k, tensorMapArgs(1 << 30, int64_t(1) << 34, 4)),
            map + "stride 'skn * n': integer overflow");
  Grid grid = {1, 1, 1};
  Result<LaunchPlan> plan =
      planLaunch(k, tensorMapArgs(1000, 80, 0), 132, 2, &grid);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.message(), map + "dim 'grid_y / H': division by zero");

  // A dim is at most 2^32.
  k = tensorMapKernel(
      R"json([{"param": "q", "dims": ["skn", "n"], "strides": ["D"], "box": [64, 32]}])json",
      1);
  EXPECT_TRUE(
      planLaunch(k, tensorMapArgs(1000, int64_t(1) << 32, 4), 132, 2).ok());
  EXPECT_EQ(planError(k, tensorMapArgs(1000, (int64_t(1) << 32) + 1, 4)),
            "kernel 'attention_fwd': tensor map of 'q': dim 'skn' = "
            "4294967297 exceeds 2^32 elements");
}

TEST(TensorMaps, BasesAreAligned) {
  KernelInfo k = tensorMapKernel();
  // o has no tensor map: any address.
  EXPECT_TRUE(checkArgs(k, tensorMapArgs(1000, 80, 4)).ok());
  const std::string expected = "kernel 'attention_fwd': argument 'k' = "
                               "0x7f0000001008 is not 16-byte aligned (its "
                               "tensor map needs it)";
  EXPECT_EQ(checkArgs(k, tensorMapArgs(1000, 80, 4, 0x7f0000001008)).message(),
            expected);
  // Every launch plan checks the arguments first, empty ones too.
  EXPECT_EQ(planError(k, tensorMapArgs(1000, 80, 4, 0x7f0000001008)), expected);
  EXPECT_EQ(planError(k, tensorMapArgs(0, 80, 4, 0x7f0000001008)), expected);
  EXPECT_TRUE(tensorMapBaseFits(0x7f0000001010));
  EXPECT_FALSE(tensorMapBaseFits(0x7f0000001001));
}
