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
  const std::pair<std::pair<std::string, std::string>, std::string> cases[] = {
      {{"\"format\": \"tessel-bundle\"", "\"format\": \"tb\""},
       "'format' must be \"tessel-bundle\""},
      {{"\"format\": \"tessel-bundle\", ", ""}, "missing member 'format'"},
      {{"\"version\": 1", "\"version\": 4"},
       "unsupported bundle version 4 (this runtime reads versions 1 to 3)"},
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
  for (const auto &[edit, expected] : cases) {
    std::string message = bundleError(edited(edit.first, edit.second));
    EXPECT_NE(message.find("error: " + expected), std::string::npos)
        << "edit: " << edit.first << " -> " << edit.second
        << "\nerror: " << message;
  }
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
  const std::pair<std::pair<std::string, std::string>, std::string> cases[] = {
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
  for (const auto &[edit, expected] : cases) {
    std::string text = makeFollowUpBundle();
    size_t at = text.find(edit.first);
    ASSERT_NE(at, std::string::npos) << edit.first;
    std::string message =
        bundleError(text.replace(at, edit.first.size(), edit.second));
    EXPECT_NE(message.find("error: " + expected), std::string::npos)
        << "edit: " << edit.first << " -> " << edit.second
        << "\nerror: " << message;
  }
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

TEST(Bundle, MultipleOfErrors) {
  const std::pair<std::pair<std::string, std::string>, std::string> cases[] = {
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
  for (const auto &[edit, expected] : cases) {
    std::string text = hintedAddBundle();
    size_t at = text.find(edit.first);
    ASSERT_NE(at, std::string::npos) << edit.first;
    std::string message =
        bundleError(text.replace(at, edit.first.size(), edit.second));
    EXPECT_NE(message.find("error: " + expected), std::string::npos)
        << "edit: " << edit.first << " -> " << edit.second
        << "\nerror: " << message;
  }
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
