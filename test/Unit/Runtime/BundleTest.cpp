//===- BundleTest.cpp - Reading and checking kernel bundles ---------------===//

#include "Runtime/Bundle.h"
#include "Runtime/Ptx.h"

#include "TestBundles.h"

#include <gtest/gtest.h>

#include <random>

using namespace tessel;

namespace {

const std::string kAddPtx = makePtx("add", {".u64", ".u64", ".u32"});

const std::string kAddKernel =
    R"json({"name": "add", "ptx_entry": "add", "num_warps": 4,
  "params": [{"name": "x", "kind": "ptr", "elem": "f32"},
             {"name": "out", "kind": "ptr", "elem": "f32"},
             {"name": "n", "kind": "i32"}],
  "constants": {"BLOCK": 256},
  "launch": {"kind": "grid", "grid": ["cdiv(n, BLOCK)"]}})json";

const std::string kAddBundle = makeBundle(kAddKernel, kAddPtx);

/// kAddBundle with the first `from` replaced by `to`.
std::string edited(const std::string &from, const std::string &to) {
  std::string text = kAddBundle;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

std::string bundleError(const std::string &text) {
  Result<Bundle> b = parseBundle(text, "b.bundle");
  EXPECT_FALSE(b.ok()) << text;
  return b.ok() ? "" : b.message();
}

/// (text to find, its replacement) and the error the edited bundle gets.
using EditCase = std::pair<std::pair<std::string, std::string>, std::string>;

/// Each edit of `base` (the first occurrence replaced) is refused with an
/// error that contains the case's message.
template <size_t N>
void expectRefused(const std::string &base, const EditCase (&cases)[N]) {
  for (const auto &[edit, expected] : cases) {
    std::string text = base;
    size_t at = text.find(edit.first);
    ASSERT_NE(at, std::string::npos) << edit.first;
    std::string message =
        bundleError(text.replace(at, edit.first.size(), edit.second));
    EXPECT_NE(message.find("error: " + expected), std::string::npos)
        << "edit: " << edit.first << " -> " << edit.second
        << "\nerror: " << message;
  }
}

} // namespace

TEST(Bundle, ReadsAGridKernel) {
  Result<Bundle> b = parseBundle(kAddBundle, "b.bundle");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->target, "sm_90");
  EXPECT_EQ(b->ptx, kAddPtx);
  ASSERT_EQ(b->kernels.size(), 1u);
  const KernelInfo &k = b->kernels[0];
  EXPECT_EQ(k.name, "add");
  EXPECT_EQ(k.ptxEntry, "add");
  EXPECT_EQ(k.numWarps, 4);
  EXPECT_EQ(k.sharedBytes, 0u);
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].kind, ArgKind::Ptr);
  EXPECT_EQ(k.params[0].elem, "f32");
  EXPECT_EQ(k.params[2].name, "n");
  EXPECT_EQ(k.params[2].kind, ArgKind::I32);
  EXPECT_EQ(k.params[2].elem, "");
  ASSERT_EQ(k.constants.size(), 1u);
  EXPECT_EQ(k.constants[0], std::make_pair(std::string("BLOCK"), int64_t(256)));
  EXPECT_EQ(k.launch.kind, LaunchRule::Kind::Grid);
  ASSERT_EQ(k.launch.grid.size(), 1u);
  EXPECT_EQ(k.launch.grid[0].text(), "cdiv(n, BLOCK)");
  EXPECT_FALSE(k.launch.workspaceBytes);
}

TEST(Bundle, ReadsTheSmokeTestInputs) {
  Result<Bundle> add = readBundleFile(inputPath("vector_add.bundle"));
  ASSERT_TRUE(add.ok()) << add.message();
  EXPECT_EQ(add->kernels[0].params.size(), 4u);
  Result<Bundle> sum = readBundleFile(inputPath("persistent_sum.bundle"));
  ASSERT_TRUE(sum.ok()) << sum.message();
  const KernelInfo &k = sum->kernels[0];
  EXPECT_EQ(k.launch.kind, LaunchRule::Kind::Persistent);
  EXPECT_EQ(k.sharedBytes, 65536u);
  ASSERT_TRUE(k.launch.maxCtas && k.launch.workspaceBytes);
  EXPECT_EQ(k.launch.workspaceBytes->text(), "16 + 4 * num_ctas");
}

TEST(Bundle, FileErrors) {
  Result<Bundle> missing = readBundleFile("/nonexistent/x.bundle");
  EXPECT_EQ(missing.message(), "cannot open bundle '/nonexistent/x.bundle': "
                               "No such file or directory");
  Result<Bundle> dir = readBundleFile(inputPath(""));
  EXPECT_NE(dir.message().find("Is a directory"), std::string::npos)
      << dir.message();
}

TEST(Bundle, SchemaErrorsNameTheKernelAndField) {
  const EditCase cases[] = {
      {{"\"format\": \"tessel-bundle\"", "\"format\": \"tb\""},
       "'format' must be \"tessel-bundle\""},
      {{"\"format\": \"tessel-bundle\", ", ""}, "missing member 'format'"},
      {{"\"version\": 1", "\"version\": 8"},
       "unsupported bundle version 8 (this runtime reads versions 1 to 7)"},
      {{"\"version\": 1", "\"version\": \"1\""},
       "'version' must be a number, got a string"},
      {{"\"target\": \"sm_90\"", "\"target\": \"sm90\""},
       "'target' must look like sm_90 or sm_90a"},
      {{"\"kernels\"", "\"kernel\""}, "unknown member 'kernel'"},
      {{"\"num_warps\": 4", "\"num_warps\": 64"},
       "kernel 'add': 'num_warps' must be an integer in [1, 32]"},
      {{"\"num_warps\": 4", "\"num_warps\": 4.0"},
       "kernel 'add': 'num_warps' must be an integer in [1, 32]"},
      {{"\"num_warps\": 4,", ""}, "kernel 'add': missing member 'num_warps'"},
      {{"\"num_warps\": 4", "\"num_warps\": 4, \"shared_byte\": 0"},
       "kernel 'add': unknown member 'shared_byte'"},
      {{"\"name\": \"add\"", "\"name\": \"2add\""},
       "'name' must be an identifier ([A-Za-z_][A-Za-z0-9_]*)"},
      {{"\"kind\": \"i32\"", "\"kind\": \"u32\""},
       "kernel 'add': parameter 'n': unknown kind (expected ptr, i32, i64, "
       "f16, bf16 or f32)"},
      {{", \"elem\": \"f32\"}", "}"}, "kernel 'add': missing member 'elem'"},
      {{"\"kind\": \"i32\"", "\"kind\": \"i32\", \"elem\": \"f32\""},
       "kernel 'add': parameter 'n': 'elem' applies to pointers only"},
      {{"\"elem\": \"f32\"", "\"elem\": \"float\""},
       "kernel 'add': parameter 'x': unknown element type 'float'"},
      {{"\"name\": \"out\"", "\"name\": \"x\""},
       "kernel 'add': duplicate parameter 'x'"},
      {{"\"name\": \"n\"", "\"name\": \"num_ctas\""},
       "kernel 'add': 'num_ctas' is reserved"},
      {{"\"name\": \"n\"", "\"name\": \"grid_x\""},
       "kernel 'add': 'grid_x' is reserved"},
      {{"\"BLOCK\": 256", "\"grid_z\": 256"},
       "kernel 'add': constant name 'grid_z' is reserved"},
      {{"\"BLOCK\": 256", "\"num_ctas\": 256"},
       "kernel 'add': constant name 'num_ctas' is reserved"},
      {{"\"BLOCK\": 256", "\"BLOCK\": 2.5"},
       "kernel 'add': constant 'BLOCK' must be an integer"},
      {{"\"BLOCK\": 256", "\"n\": 256"},
       "kernel 'add': constant 'n' shadows a parameter"},
      {{"\"kind\": \"grid\"", "\"kind\": \"cluster\""},
       "kernel 'add': launch 'kind' must be \"grid\" or \"persistent\""},
      {{"[\"cdiv(n, BLOCK)\"]", "[]"},
       "kernel 'add': 'grid' must have 1 to 3 entries"},
      {{"[\"cdiv(n, BLOCK)\"]", "[1, 1, 1, 1]"},
       "kernel 'add': 'grid' must have 1 to 3 entries"},
      {{"\"cdiv(n, BLOCK)\"", "\"cdiv(m, BLOCK)\""},
       "kernel 'add': grid[0]: 'cdiv(m, BLOCK)': unknown name 'm' at column "
       "6"},
      {{"\"cdiv(n, BLOCK)\"", "\"cdiv(x, BLOCK)\""},
       "kernel 'add': grid[0]: 'cdiv(x, BLOCK)': 'x' is a ptr parameter; only "
       "integer parameters and constants can appear at column 6"},
      {{"\"cdiv(n, BLOCK)\"", "\"num_ctas\""},
       "kernel 'add': grid[0]: 'num_ctas': num_ctas can only appear in "
       "workspace_bytes at column 1"},
      {{"\"cdiv(n, BLOCK)\"", "\"grid_y\""},
       "kernel 'add': grid[0]: 'grid_y': grid_y can only appear in tensor "
       "maps at column 1"},
      {{"\"cdiv(n, BLOCK)\"", "2.5"},
       "kernel 'add': grid[0] must be an expression string or integer"},
      {{"\"grid\": [", "\"max_ctas\": 4, \"grid\": ["},
       "kernel 'add': 'max_ctas' applies to persistent launches only"},
      {{"\"kind\": \"grid\"", "\"kind\": \"persistent\""},
       "kernel 'add': persistent launches size their grid from the device; "
       "use 'max_ctas' to bound it"},
      {{"\"ptx_entry\": \"add\"", "\"ptx_entry\": \"add_kernel\""},
       "kernel 'add': the PTX has no entry 'add_kernel'"},
      {{"{\"name\": \"n\", \"kind\": \"i32\"}",
        "{\"name\": \"n\", \"kind\": \"i32\"}, {\"name\": \"m\", \"kind\": "
        "\"i32\"}"},
       "kernel 'add': the bundle lists 4 parameters but PTX entry 'add' has 3"},
      {{"\"kind\": \"i32\"", "\"kind\": \"i64\""},
       "kernel 'add': parameter 'n' is i64 (8 bytes) but PTX entry 'add' "
       "declares 4 bytes"},
      {{"[\"cdiv(n, BLOCK)\"]", "[1], \"workspace_bytes\": 64"},
       "kernel 'add': the bundle lists 3 parameters plus the workspace "
       "pointer but PTX entry 'add' has 3"},
      {{"\"kernels\": [", "\"kernels\": [" + kAddKernel + ", "},
       "kernel 'add': duplicate kernel name"},
      {{"\"kernels\": [" + kAddKernel, "\"kernels\": ["}, "'kernels' is empty"},
      {{"\"kernels\": [" + kAddKernel, "\"kernels\": [3"},
       "a kernel must be a JSON object"},
  };
  expectRefused(kAddBundle, cases);
  EXPECT_EQ(bundleError("[]"),
            "b.bundle:1:1: error: a bundle must be a JSON object");
}

TEST(Bundle, ErrorsPointAtTheValue) {
  // Line 2 is ` "kernels": [{"name": "add", "ptx_entry": "add", "num_warps":
  // 64,`.
  std::string message =
      bundleError(edited("\"num_warps\": 4", "\"num_warps\": 64"));
  EXPECT_EQ(message.rfind("b.bundle:2:63: error: kernel 'add': ", 0), 0u)
      << message;
}

TEST(Bundle, ReadsPersistentLaunches) {
  std::string kernel =
      R"json({"name": "k", "ptx_entry": "k", "num_warps": 8, "shared_bytes": 99000,
  "params": [{"name": "n", "kind": "i64"}],
  "launch": {"kind": "persistent", "max_ctas": "n", "ctas_per_sm": 1,
             "workspace_bytes": "8 * num_ctas + n"}})json";
  Result<Bundle> b = parseBundle(
      makeBundle(kernel, makePtx("k", {".u64", ".u64"}), "sm_90a"), "b");
  ASSERT_TRUE(b.ok()) << b.message();
  const LaunchRule &rule = b->kernels[0].launch;
  EXPECT_EQ(rule.kind, LaunchRule::Kind::Persistent);
  EXPECT_EQ(rule.ctasPerSM, 1);
  EXPECT_EQ(b->kernels[0].sharedBytes, 99000u);
  ASSERT_TRUE(rule.workspaceBytes);
  EXPECT_EQ(*rule.workspaceBytes->eval({100, 7}), 7 * 8 + 100);
}

TEST(Bundle, ReadsAFollowUp) {
  Result<Bundle> b = parseBundle(makeFollowUpBundle(), "b");
  ASSERT_TRUE(b.ok()) << b.message();
  ASSERT_EQ(b->kernels.size(), 2u);
  EXPECT_EQ(b->kernels[0].launch.then, "k__combine");
  EXPECT_EQ(b->kernels[1].launch.then, "");
}

TEST(Bundle, FollowUpErrors) {
  const std::string combineLaunch =
      R"json({"kind": "persistent", "workspace_bytes": "16 * num_ctas"}})json";
  const EditCase cases[] = {
      {{"\"version\": 2", "\"version\": 1"},
       "kernel 'k': 'then' needs bundle version 2"},
      {{"\"then\": \"k__combine\"", "\"then\": 3"},
       "kernel 'k': 'then' must be a string, got a number"},
      {{"\"then\": \"k__combine\"", "\"then\": \"k-combine\""},
       "kernel 'k': 'then' must be an identifier"},
      {{"\"then\": \"k__combine\"", "\"then\": \"k_combine\""},
       "kernel 'k': 'then' names kernel 'k_combine', which the bundle does "
       "not have"},
      {{"\"then\": \"k__combine\"", "\"then\": \"k\""},
       "kernel 'k': 'then' names the kernel itself"},
      {{combineLaunch,
        R"json({"kind": "persistent", "workspace_bytes": "16 * num_ctas", "then": "k"}})json"},
       "kernel 'k': 'then' names kernel 'k__combine', which has a 'then' of "
       "its own"},
      {{"{\"name\": \"k__combine\"",
        R"json({"name": "j", "ptx_entry": "k", "num_warps": 4,
  "params": [{"name": "x", "kind": "ptr", "elem": "f32"}, {"name": "n", "kind": "i32"}],
  "launch": {"kind": "persistent", "workspace_bytes": "16 * num_ctas", "then": "k__combine"}},
  {"name": "k__combine")json"},
       "kernel 'k': kernel 'k__combine' is also the 'then' of kernel 'j'"},
      {{"1024,\n  \"params\": [{\"name\": \"x\"",
        "1024,\n  \"params\": [{\"name\": \"y\""},
       "kernel 'k': kernel 'k__combine' must take the same parameters to run "
       "as its 'then'"},
      {{combineLaunch,
        R"json({"kind": "grid", "workspace_bytes": "16 * num_ctas"}})json"},
       "kernel 'k': kernel 'k__combine' must have the same launch kind and "
       "workspace to run as its 'then'"},
  };
  expectRefused(makeFollowUpBundle(), cases);
}

TEST(Bundle, WorkspaceZeroing) {
  const std::string launch =
      R"json("workspace_bytes": "16 * num_ctas", "then")json";
  auto zeroing = [&](const std::string &value) {
    return replaceAll(launch, ", \"then\"",
                      ", \"workspace_zeroing\": " + value + ", \"then\"");
  };
  std::string v5 =
      replaceAll(makeFollowUpBundle(), "\"version\": 2", "\"version\": 5");
  for (auto [value, expected] :
       {std::pair{"\"per_size\"", LaunchRule::Zeroing::PerSize},
        std::pair{"\"per_launch\"", LaunchRule::Zeroing::PerLaunch}}) {
    Result<Bundle> b = parseBundle(replaceAll(v5, launch, zeroing(value)), "b");
    ASSERT_TRUE(b.ok()) << b.message();
    EXPECT_EQ(b->kernels[0].launch.workspaceZeroing, expected);
    EXPECT_EQ(b->kernels[1].launch.workspaceZeroing,
              LaunchRule::Zeroing::PerLaunch);
  }
  const EditCase cases[] = {
      {{"\"version\": 5", "\"version\": 4"},
       "kernel 'k': 'workspace_zeroing' needs bundle version 5"},
      {{zeroing("\"per_size\""), zeroing("\"once\"")},
       "kernel 'k': 'workspace_zeroing' must be \"per_launch\" or "
       "\"per_size\""},
      {{zeroing("\"per_size\""), zeroing("1")},
       "kernel 'k': 'workspace_zeroing' must be a string, got a number"},
      {{zeroing("\"per_size\""),
        "\"workspace_zeroing\": \"per_size\", \"then\""},
       "kernel 'k': 'workspace_zeroing' needs 'workspace_bytes'"},
  };
  expectRefused(replaceAll(v5, launch, zeroing("\"per_size\"")), cases);
}

TEST(Bundle, ReadsClusters) {
  EXPECT_EQ(parseBundle(kAddBundle, "b")->kernels[0].launch.cluster, 1);
  std::string text =
      replaceAll(edited("\"grid\": [", "\"cluster\": 4, \"grid\": ["),
                 "\"version\": 1", "\"version\": 6");
  Result<Bundle> b = parseBundle(text, "b");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->kernels[0].launch.cluster, 4);
  const EditCase cases[] = {
      {{"\"cluster\": 4", "\"cluster\": 0"},
       "kernel 'add': 'cluster' must be an integer in [1, 16]"},
      {{"\"cluster\": 4", "\"cluster\": 17"},
       "kernel 'add': 'cluster' must be an integer in [1, 16]"},
      {{"\"cluster\": 4", "\"cluster\": 2.5"},
       "kernel 'add': 'cluster' must be an integer in [1, 16]"},
      {{"\"cluster\": 4", "\"cluster\": \"4\""},
       "kernel 'add': 'cluster' must be a number, got a string"},
      {{"\"cluster\": 4", "\"clusters\": 4"},
       "kernel 'add': unknown member 'clusters'"},
      {{"\"version\": 6", "\"version\": 5"},
       "kernel 'add': 'cluster' needs bundle version 6"},
  };
  expectRefused(text, cases);
}

// Written by the compiler's writer (test/Unit/Conversion checks it writes
// exactly this).
TEST(Bundle, ReadsTheWritersClusters) {
  Result<Bundle> b = readBundleFile(inputPath("clusters.bundle"));
  ASSERT_TRUE(b.ok()) << b.message();
  ASSERT_EQ(b->kernels.size(), 2u);
  EXPECT_EQ(b->kernels[0].launch.kind, LaunchRule::Kind::Grid);
  EXPECT_EQ(b->kernels[0].launch.cluster, 2);
  EXPECT_EQ(b->kernels[1].launch.kind, LaunchRule::Kind::Persistent);
  EXPECT_EQ(b->kernels[1].launch.cluster, 16);
}

TEST(Bundle, AFollowUpRunsInClustersThatDivideItsLeaders) {
  // The leader in clusters of `leader`, its 'then' in clusters of `next`.
  auto clustered = [](int leader, int next) {
    std::string text =
        replaceAll(makeFollowUpBundle(), "\"version\": 2", "\"version\": 6");
    const std::string kind = "\"kind\": \"persistent\", ";
    size_t first = text.find(kind) + kind.size();
    text.insert(first, "\"cluster\": " + std::to_string(leader) + ", ");
    text.insert(text.find(kind, first) + kind.size(),
                "\"cluster\": " + std::to_string(next) + ", ");
    return text;
  };
  const std::pair<int, int> readable[] = {{4, 4}, {4, 2}, {4, 1}, {1, 1}};
  for (auto [leader, next] : readable) {
    Result<Bundle> b = parseBundle(clustered(leader, next), "b");
    ASSERT_TRUE(b.ok()) << b.message();
    EXPECT_EQ(b->kernels[0].launch.cluster, leader);
    EXPECT_EQ(b->kernels[1].launch.cluster, next);
  }
  EXPECT_NE(bundleError(clustered(4, 8))
                .find("error: kernel 'k': kernel 'k__combine' must have a "
                      "cluster size that divides 4 (it has 8) to run as its "
                      "'then'"),
            std::string::npos);
  EXPECT_NE(bundleError(clustered(4, 3)).find("that divides 4 (it has 3)"),
            std::string::npos);
}

namespace {
/// kAddKernel with multiple_of hints on x (16 bytes) and n (8), in a bundle
/// of version `version`.
std::string hintedAddBundle(int version = 3) {
  std::string kernel = kAddKernel;
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"\"elem\": \"f32\"}",
                                            "\"elem\": \"f32\", "
                                            "\"multiple_of\": 16}"},
        {"\"kind\": \"i32\"}", "\"kind\": \"i32\", \"multiple_of\": 8}"}})
    kernel.replace(kernel.find(from), from.size(), to);
  return makeBundle(kernel, kAddPtx, "sm_90", version);
}
} // namespace

TEST(Bundle, ReadsMultipleOfHints) {
  Result<Bundle> b = parseBundle(hintedAddBundle(), "b.bundle");
  ASSERT_TRUE(b.ok()) << b.message();
  const std::vector<ParamInfo> &params = b->kernels[0].params;
  EXPECT_EQ(params[0].multipleOf, 16);
  EXPECT_EQ(params[1].multipleOf, 0);
  EXPECT_EQ(params[2].multipleOf, 8);
  // Bundles of older versions have no hints; version 3 need not use any.
  Result<Bundle> old = parseBundle(kAddBundle, "b.bundle");
  ASSERT_TRUE(old.ok()) << old.message();
  for (const ParamInfo &p : old->kernels[0].params)
    EXPECT_EQ(p.multipleOf, 0) << p.name;
  Result<Bundle> unused =
      parseBundle(makeBundle(kAddKernel, kAddPtx, "sm_90", 3), "b.bundle");
  EXPECT_TRUE(unused.ok()) << unused.message();
}

TEST(Bundle, ReadsNonePointers) {
  // kAddKernel with `out` compiled as None.
  std::string kernel = kAddKernel;
  std::string out = "\"name\": \"out\", \"kind\": \"ptr\", \"elem\": \"f32\"";
  ASSERT_NE(kernel.find(out), std::string::npos);
  kernel.replace(kernel.find(out), out.size(), out + ", \"none\": true");
  Result<Bundle> b =
      parseBundle(makeBundle(kernel, kAddPtx, "sm_90", 7), "b.bundle");
  ASSERT_TRUE(b.ok()) << b.message();
  const std::vector<ParamInfo> &params = b->kernels[0].params;
  EXPECT_FALSE(params[0].none);
  EXPECT_TRUE(params[1].none);
  const EditCase cases[] = {
      {{"\"none\": true", "\"none\": false"},
       "kernel 'add': parameter 'out': 'none' is true, on ptr parameters "
       "only"},
      {{"\"none\": true", "\"none\": 1"},
       "kernel 'add': parameter 'out': 'none' is true, on ptr parameters "
       "only"},
      {{"\"version\": 7", "\"version\": 6"},
       "kernel 'add': 'none' needs bundle version 7"},
  };
  expectRefused(makeBundle(kernel, kAddPtx, "sm_90", 7), cases);
  std::string scalar = kAddKernel;
  std::string n = "\"kind\": \"i32\"";
  scalar.replace(scalar.find(n), n.size(), n + ", \"none\": true");
  EXPECT_NE(bundleError(makeBundle(scalar, kAddPtx, "sm_90", 7))
                .find("parameter 'n': 'none' is true, on ptr parameters only"),
            std::string::npos);
}

TEST(Bundle, NonePointersAgreeAndMapNothing) {
  // A follow-up kernel takes the leader's null pointer as it is: both mark it.
  std::string followUp = makeFollowUpBundle();
  followUp.replace(followUp.find("\"version\": 2"), 12, "\"version\": 7");
  std::string x = "{\"name\": \"x\", \"kind\": \"ptr\", \"elem\": \"f32\"";
  std::string both = followUp;
  for (int i = 0; i < 2; ++i)
    both.replace(both.find(x + "}"), x.size() + 1, x + ", \"none\": true}");
  Result<Bundle> b = parseBundle(both, "b");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_TRUE(b->kernels[1].params[0].none);
  std::string leader = followUp;
  leader.replace(leader.find(x + "}"), x.size() + 1, x + ", \"none\": true}");
  EXPECT_NE(bundleError(leader).find(
                "error: kernel 'k': kernel 'k__combine' must take the same "
                "parameters to run as its 'then'"),
            std::string::npos);
  // A tensor map describes a buffer.
  std::string maps = makeTensorMapBundle();
  maps.replace(maps.find("\"version\": 4"), 12, "\"version\": 7");
  std::string q = "\"name\": \"q\", \"kind\": \"ptr\", \"elem\": \"f16\"";
  maps.replace(maps.find(q), q.size(), q + ", \"none\": true");
  EXPECT_NE(bundleError(maps).find("'q' is compiled as None; a tensor map "
                                   "needs a buffer"),
            std::string::npos)
      << bundleError(maps);
}

TEST(Bundle, MultipleOfErrors) {
  const EditCase cases[] = {
      {{"\"multiple_of\": 8", "\"multiple_of\": 0"},
       "kernel 'add': 'multiple_of' must be an integer in [1, "
       "9223372036854775807]"},
      {{"\"multiple_of\": 8", "\"multiple_of\": -8"},
       "kernel 'add': 'multiple_of' must be an integer in [1, "},
      {{"\"multiple_of\": 8", "\"multiple_of\": 8.5"},
       "kernel 'add': 'multiple_of' must be an integer in [1, "},
      {{"\"multiple_of\": 8", "\"multiple_of\": \"8\""},
       "kernel 'add': 'multiple_of' must be a number, got a string"},
      {{"\"multiple_of\": 8", "\"multiple_of_\": 8"},
       "kernel 'add': unknown member 'multiple_of_'"},
      {{"\"kind\": \"i32\"", "\"kind\": \"f32\""},
       "kernel 'add': parameter 'n': 'multiple_of' applies to ptr, i32 and "
       "i64 parameters only"},
  };
  expectRefused(hintedAddBundle(), cases);
  // The member came with version 3: older versions reject it, at the value.
  for (int version : {1, 2}) {
    std::string message = bundleError(hintedAddBundle(version));
    EXPECT_NE(message.find("error: kernel 'add': 'multiple_of' needs bundle "
                           "version 3"),
              std::string::npos)
        << message;
  }
}

TEST(Bundle, AFollowUpHasTheSameHints) {
  std::string text = makeFollowUpBundle();
  std::string from = "\"kind\": \"i32\"}";
  std::string to = "\"kind\": \"i32\", \"multiple_of\": 4}";
  text.replace(text.find("\"version\": 2"), 12, "\"version\": 3");
  // On both kernels: readable.
  std::string both = text;
  both.replace(both.find(from), from.size(), to);
  both.replace(both.find(from), from.size(), to);
  Result<Bundle> b = parseBundle(both, "b");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->kernels[1].params[1].multipleOf, 4);
  // On the leader only: the follow-up would run with an unchecked hint.
  std::string leader = text;
  leader.replace(leader.find(from), from.size(), to);
  EXPECT_NE(bundleError(leader).find(
                "error: kernel 'k': kernel 'k__combine' must take the same "
                "parameters to run as its 'then'"),
            std::string::npos);
}

TEST(Bundle, ReadsTensorMaps) {
  Result<Bundle> b = parseBundle(makeTensorMapBundle(), "b.bundle");
  ASSERT_TRUE(b.ok()) << b.message();
  const KernelInfo &k = b->kernels[0];
  ASSERT_EQ(k.tensorMaps.size(), 2u);
  const TensorMapInfo &map = k.tensorMaps[0];
  EXPECT_EQ(k.params[map.param].name, "k");
  ASSERT_EQ(map.dims.size(), 3u);
  EXPECT_EQ(map.dims[2].text(), "grid_y / H");
  ASSERT_EQ(map.strides.size(), 2u);
  EXPECT_EQ(map.strides[1].text(), "skn * n");
  EXPECT_EQ(map.box, (std::vector<uint32_t>{64, 64, 1}));
  EXPECT_EQ(map.swizzle, 128u);
  EXPECT_EQ(map.elemBytes, 2u);
  EXPECT_EQ(map.dataType, 9); // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  // Names resolve to the parameters' slots, constants and the grid's.
  std::vector<int64_t> slots(k.numSlots(), 0);
  slots[3] = 1000; // n
  slots[4] = 80;   // skn
  slots[5] = 4;    // H
  slots[k.gridSlot(1)] = 12;
  EXPECT_EQ(*map.dims[0].eval(slots), 64);
  EXPECT_EQ(*map.dims[2].eval(slots), 3);
  EXPECT_EQ(*map.strides[1].eval(slots), 80000);

  const TensorMapInfo &q = k.tensorMaps[1];
  EXPECT_EQ(k.params[q.param].name, "q");
  EXPECT_EQ(q.box, (std::vector<uint32_t>{64, 32}));
  EXPECT_EQ(q.swizzle, 0u); // the default
  EXPECT_EQ(q.dataType, 6); // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
}

// Written by the compiler's writer (test/Unit/Conversion checks it writes
// exactly this).
TEST(Bundle, ReadsTheWritersTensorMaps) {
  Result<Bundle> b = readBundleFile(inputPath("tensor_maps.bundle"));
  ASSERT_TRUE(b.ok()) << b.message();
  const KernelInfo &k = b->kernels[0];
  ASSERT_EQ(k.tensorMaps.size(), 2u);
  const TensorMapInfo &map = k.tensorMaps[0];
  EXPECT_EQ(k.params[map.param].name, "k");
  ASSERT_EQ(map.dims.size(), 4u);
  EXPECT_EQ(map.dims[3].text(), "grid_y / H");
  ASSERT_EQ(map.strides.size(), 3u);
  EXPECT_EQ(map.strides[2].text(), "skb");
  EXPECT_EQ(map.box, (std::vector<uint32_t>{64, 64, 1, 1}));
  EXPECT_EQ(map.swizzle, 128u);
  EXPECT_EQ(map.dataType, 6); // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
  EXPECT_EQ(k.params[k.tensorMaps[1].param].name, "q");
  EXPECT_EQ(k.tensorMaps[1].box, (std::vector<uint32_t>{64, 32}));
  EXPECT_EQ(k.tensorMaps[1].swizzle, 0u);
}

TEST(Bundle, TensorMapElementTypes) {
  // elem -> (bytes, CUtensorMapDataType as cuda.h numbers it).
  const std::pair<std::string, std::pair<unsigned, int>> types[] = {
      {"f16", {2, 6}}, {"bf16", {2, 9}}, {"f32", {4, 7}},
      {"i32", {4, 3}}, {"i8", {1, 0}},
  };
  for (const auto &[elem, expected] : types) {
    std::string text = makeTensorMapBundle();
    std::string from = "\"elem\": \"bf16\"";
    text.replace(text.find(from), from.size(), "\"elem\": \"" + elem + "\"");
    // A box row of 128 bytes at most, as the swizzle needs.
    text.replace(text.find("[64, 64, 1]"), 11, "[32, 64, 1]");
    Result<Bundle> b = parseBundle(text, "b.bundle");
    ASSERT_TRUE(b.ok()) << elem << ": " << b.message();
    EXPECT_EQ(b->kernels[0].tensorMaps[0].elemBytes, expected.first) << elem;
    EXPECT_EQ(b->kernels[0].tensorMaps[0].dataType, expected.second) << elem;
  }
}

TEST(Bundle, TensorMapErrors) {
  const std::string prefix = "kernel 'attention_fwd': tensor map of 'k': ";
  const EditCase cases[] = {
      {{"\"param\": \"k\"", "\"param\": \"n\""},
       "kernel 'attention_fwd': tensor map of 'n': 'n' is a i32 parameter; a "
       "tensor map needs a ptr"},
      {{"\"param\": \"k\"", "\"param\": \"v\""},
       "kernel 'attention_fwd': tensor map of 'v': the kernel has no "
       "parameter 'v'"},
      {{"\"param\": \"k\", ", ""},
       "kernel 'attention_fwd': missing member 'param'"},
      {{"\"elem\": \"bf16\"", "\"elem\": \"f64\""},
       prefix + "TMA cannot copy elements of type 'f64' (only f16, bf16, f32, "
                "i32 and i8)"},
      {{"\"swizzle\": 128", "\"swizle\": 128"},
       prefix + "unknown member 'swizle'"},
      {{"[\n    {\"param\"", "[3, {\"param\""},
       "kernel 'attention_fwd': a tensor map must be a JSON object"},
      {{"[\"D\", \"n\", \"grid_y / H\"]", "[]"},
       prefix + "'dims' must have 1 to 5 entries"},
      {{"[\"D\", \"n\", \"grid_y / H\"]", "[1, 1, 1, 1, 1, 1]"},
       prefix + "'dims' must have 1 to 5 entries"},
      {{"[\"skn\", \"skn * n\"]", "[\"skn\"]"},
       prefix + "'strides' must have 2 entries, one per dim after the first"},
      {{"\"grid_y / H\"", "\"grid_w / H\""},
       prefix + "dims[2]: 'grid_w / H': unknown name 'grid_w' at column 1"},
      {{"\"grid_y / H\"", "\"q\""},
       prefix + "dims[2]: 'q': 'q' is a ptr parameter; only integer "
                "parameters and constants can appear at column 1"},
      {{"\"grid_y / H\"", "\"num_ctas\""},
       prefix + "dims[2]: 'num_ctas': num_ctas can only appear in "
                "workspace_bytes at column 1"},
      {{"\"skn * n\"", "\"skn * \""},
       prefix + "strides[1]: 'skn * ': expected a number, a name or '(', got "
                "the end at end"},
      {{"\"skn * n\"", "1.5"},
       prefix + "strides[1] must be an expression string or integer"},
      {{"[64, 64, 1]", "[64, 64]"},
       prefix + "'box' must have 3 entries, one per dim"},
      {{"[64, 64, 1]", "[64, 0, 1]"},
       prefix + "box[1] must be an integer in [1, 256]"},
      {{"[64, 64, 1]", "[64, 257, 1]"},
       prefix + "box[1] must be an integer in [1, 256]"},
      {{"[64, 64, 1]", "[64, 64, 1.5]"},
       prefix + "box[2] must be an integer in [1, 256]"},
      {{"[64, 64, 1]", "[4, 64, 1]"},
       prefix + "box[0] = 4 elements of bf16 (8 bytes) is not a multiple of "
                "16 bytes"},
      {{"[64, 64, 1]", "[128, 64, 1]"},
       prefix + "box[0] = 128 elements of bf16 (256 bytes) is wider than the "
                "128-byte swizzle"},
      {{"\"swizzle\": 128", "\"swizzle\": 64"},
       prefix + "box[0] = 64 elements of bf16 (128 bytes) is wider than the "
                "64-byte swizzle"},
      {{"\"swizzle\": 128", "\"swizzle\": 16"},
       prefix + "'swizzle' must be 0, 32, 64 or 128"},
      {{"\"swizzle\": 128", "\"swizzle\": 128.5"},
       prefix + "'swizzle' must be 0, 32, 64 or 128"},
      {{"\"swizzle\": 128", "\"swizzle\": \"128\""},
       prefix + "'swizzle' must be a number, got a string"},
      {{"\"version\": 4", "\"version\": 3"},
       "kernel 'attention_fwd': 'tensor_maps' needs bundle version 4"},
      {{"map[128], .param .u64 workspace", "map[64], .param .u64 workspace"},
       "kernel 'attention_fwd': the tensor map of 'q' is a 128-byte "
       "CUtensorMap but PTX entry 'attention_fwd' declares 64 bytes"},
      {{", .param .align 64 .b8 map[128], .param .u64 workspace",
        ", .param .u64 workspace"},
       "kernel 'attention_fwd': the bundle lists 6 parameters plus 2 tensor "
       "maps plus the workspace pointer but PTX entry 'attention_fwd' has 8"},
  };
  expectRefused(makeTensorMapBundle(), cases);
  // One map: the count reads in the singular.
  std::string oneMap =
      R"json([{"param": "q", "dims": ["D"], "strides": [], "box": [8]}])json";
  EXPECT_NE(bundleError(makeTensorMapBundle(oneMap, 0))
                .find("error: kernel 'attention_fwd': the bundle lists 6 "
                      "parameters plus 1 tensor map plus the workspace "
                      "pointer but PTX entry 'attention_fwd' has 7"),
            std::string::npos);
  EXPECT_TRUE(parseBundle(makeTensorMapBundle(oneMap, 1), "b").ok());
  EXPECT_NE(bundleError(makeTensorMapBundle("{}", 0))
                .find("error: kernel 'attention_fwd': 'tensor_maps' must be "
                      "an array, got an object"),
            std::string::npos);
  // An empty list needs no parameters.
  Result<Bundle> none = parseBundle(makeTensorMapBundle("[]", 0), "b");
  ASSERT_TRUE(none.ok()) << none.message();
  EXPECT_TRUE(none->kernels[0].tensorMaps.empty());
}

TEST(Bundle, ErrorsPointAtTheTensorMapValue) {
  // Line 12 is `     "box": [64, 64, 1], "swizzle": 16},`.
  std::string text = makeTensorMapBundle();
  text.replace(text.find("\"swizzle\": 128"), 14, "\"swizzle\": 16");
  std::string message = bundleError(text);
  EXPECT_EQ(message.rfind("b.bundle:12:37: error: kernel 'attention_fwd': "
                          "tensor map of 'k': 'swizzle' must be",
                          0),
            0u)
      << message;
}

TEST(Bundle, AFollowUpHasTheSameTensorMaps) {
  Result<Bundle> b = parseBundle(makeFollowUpBundleWithMaps(), "b");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->kernels[1].tensorMaps.size(), 1u);
  EXPECT_NE(bundleError(makeFollowUpBundleWithMaps(8))
                .find("error: kernel 'k': kernel 'k__combine' must have the "
                      "same tensor maps to run as its 'then'"),
            std::string::npos);
  // Expressions compare by what they compute from the same names: written
  // otherwise is the same, another formula of equal value is not.
  std::string text = makeFollowUpBundleWithMaps();
  text.replace(text.rfind("[\"n\"]"), 5, "[\"(n)\"]");
  EXPECT_TRUE(parseBundle(text, "b").ok());
  text = makeFollowUpBundleWithMaps();
  text.replace(text.rfind("[\"n\"]"), 5, "[\"n + 0\"]");
  EXPECT_NE(bundleError(text).find("must have the same tensor maps"),
            std::string::npos);
}

TEST(Bundle, Targets) {
  std::optional<Target> t = parseTarget("sm_90a");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->major, 9);
  EXPECT_EQ(t->minor, 0);
  EXPECT_TRUE(t->archSpecific);
  t = parseTarget("sm_120");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->major, 12);
  EXPECT_FALSE(t->archSpecific);
  for (const char *bad :
       {"sm_9", "sm_9000", "sm_", "sm_a", "compute_90", "sm_9x", ""})
    EXPECT_FALSE(parseTarget(bad)) << bad;
}

TEST(Ptx, EntryParameterSizes) {
  std::string ptx = ".visible .entry add_more(.param .u32 a)\n"
                    ".visible .entry add(\n"
                    "\t.param .u64 .ptr .global .align 16 add_param_0,\n"
                    "\t.param .align 2 .b8 add_param_1[2],\n"
                    "\t.param .f32 add_param_2,\n"
                    "\t.param .align 8 .b8 add_param_3[16]\n"
                    ")\n{ ret; }\n"
                    ".entry none { ret; }";
  Result<std::vector<unsigned>> sizes = ptxEntryParamSizes(ptx, "add");
  ASSERT_TRUE(sizes.ok()) << sizes.message();
  EXPECT_EQ(*sizes, (std::vector<unsigned>{8, 2, 4, 16}));
  EXPECT_EQ(*ptxEntryParamSizes(ptx, "add_more"), std::vector<unsigned>{4});
  EXPECT_TRUE(ptxEntryParamSizes(ptx, "none")->empty());
  EXPECT_TRUE(ptxEntryParamSizes(".entry e()", "e")->empty());
  EXPECT_EQ(ptxEntryParamSizes(ptx, "ad").message(),
            "the PTX has no entry 'ad'");
  EXPECT_EQ(ptxEntryParamSizes(".entry e(.param .u32 a", "e").message(),
            "the parameter list of PTX entry 'e' is not closed");
  EXPECT_EQ(
      ptxEntryParamSizes(".entry e(.param .u32 a, .param x)", "e").message(),
      "cannot read parameter 1 of PTX entry 'e'");
  EXPECT_FALSE(ptxEntryParamSizes(".entry e(.param .b8 a[)", "e").ok());
  EXPECT_FALSE(ptxEntryParamSizes(".entry e(.param .b8 a[0])", "e").ok());
}

TEST(Bundle, DamagedInputNeverCrashes) {
  std::string text = readInput("persistent_sum.bundle");
  ASSERT_TRUE(parseBundle(text, "b").ok());
  std::mt19937 rng(99);
  const char interesting[] = "{}[],:\"\\0123456789-+eE.() ";
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = text;
    for (int i = 0; i < 1 + round % 3; ++i)
      damaged[rng() % damaged.size()] =
          interesting[rng() % (sizeof(interesting) - 1)];
    Result<Bundle> b = parseBundle(damaged, "b");
    if (!b.ok()) {
      EXPECT_EQ(b.message().rfind("b:", 0), 0u) << b.message();
    }
  }
}
