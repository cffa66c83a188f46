//===- TestBundles.h - Bundles for the runtime's tests ----------*- C++ -*-===//

#ifndef TESSEL_TEST_TESTBUNDLES_H
#define TESSEL_TEST_TESTBUNDLES_H

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

/// A file of test/Unit/Runtime/Inputs. TESSEL_RUNTIME_TEST_INPUTS in the
/// environment overrides the directory, for running a copied test binary.
inline std::string inputPath(const std::string &name) {
  const char *dir = std::getenv("TESSEL_RUNTIME_TEST_INPUTS");
  return std::string(dir ? dir : TESSEL_RUNTIME_TEST_INPUTS) + "/" + name;
}

inline std::string readInput(const std::string &name) {
  std::ifstream in(inputPath(name), std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// One-line PTX with an entry taking parameters of the given PTX types.
inline std::string makePtx(const std::string &entry,
                           std::initializer_list<const char *> types) {
  std::string ptx = ".version 8.0 .target sm_90 .address_size 64 "
                    ".visible .entry " +
                    entry + "(";
  int i = 0;
  for (const char *type : types) {
    ptx += std::string(i ? ", " : "") + ".param " + type + " p" +
           std::to_string(i);
    ++i;
  }
  return ptx + ") { ret; }";
}

/// `text` with every `from` replaced by `to`.
inline std::string replaceAll(std::string text, const std::string &from,
                              const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// A CUtensorMap parameter as the compiler declares it.
constexpr const char *kPtxTensorMap = ".param .align 64 .b8 map[128]";

/// A bundle holding one kernel (a JSON object) and the PTX (which must need
/// no JSON escaping).
inline std::string makeBundle(const std::string &kernel, const std::string &ptx,
                              const std::string &target = "sm_90",
                              int version = 1) {
  return "{\"format\": \"tessel-bundle\", \"version\": " +
         std::to_string(version) + ", \"target\": \"" + target +
         "\",\n \"kernels\": [" + kernel + "],\n \"ptx\": \"" + ptx + "\"}";
}

/// A version-2 bundle as split-K gives: persistent kernel `k` (x: ptr,
/// n: i32, then the workspace) whose 'then' is `k__combine`, with the same
/// parameters but 8 warps and 1024 bytes of shared memory.
inline std::string makeFollowUpBundle() {
  const char *kernels = R"json({"name": "k", "ptx_entry": "k", "num_warps": 4,
  "params": [{"name": "x", "kind": "ptr", "elem": "f32"}, {"name": "n", "kind": "i32"}],
  "launch": {"kind": "persistent", "workspace_bytes": "16 * num_ctas", "then": "k__combine"}},
  {"name": "k__combine", "ptx_entry": "k__combine", "num_warps": 8, "shared_bytes": 1024,
  "params": [{"name": "x", "kind": "ptr", "elem": "f32"}, {"name": "n", "kind": "i32"}],
  "launch": {"kind": "persistent", "workspace_bytes": "16 * num_ctas"}})json";
  std::string ptx = makePtx("k", {".u64", ".u32", ".u64"}) +
                    " .visible .entry k__combine(.param .u64 p0, .param .u32 "
                    "p1, .param .u64 p2) { ret; }";
  return makeBundle(kernels, ptx, "sm_90", 2);
}

/// The tensor maps of makeTensorMapBundle() unless it is given others: of 'k'
/// (bf16, 3-D, the last dim from the grid) and of 'q' (f16, 2-D).
constexpr const char *kTestTensorMaps = R"json([
    {"param": "k", "dims": ["D", "n", "grid_y / H"], "strides": ["skn", "skn * n"],
     "box": [64, 64, 1], "swizzle": 128},
    {"param": "q", "dims": ["D", "n"], "strides": ["D"], "box": [64, 32]}])json";

/// A version-4 bundle of kernel attention_fwd(q: f16 ptr, k: bf16 ptr,
/// o: f32 ptr, n: i32, skn: i64, H: i32), constant D = 64, grid
/// (cdiv(n, 64), 2 * H), a 64-byte workspace and the tensor maps `maps`,
/// with as many CUtensorMap parameters in the PTX.
inline std::string
makeTensorMapBundle(const std::string &maps = kTestTensorMaps,
                    int ptxMaps = 2) {
  std::string kernel =
      R"json({"name": "attention_fwd", "ptx_entry": "attention_fwd", "num_warps": 4,
  "params": [{"name": "q", "kind": "ptr", "elem": "f16"},
             {"name": "k", "kind": "ptr", "elem": "bf16"},
             {"name": "o", "kind": "ptr", "elem": "f32"},
             {"name": "n", "kind": "i32"}, {"name": "skn", "kind": "i64"},
             {"name": "H", "kind": "i32"}],
  "constants": {"D": 64},
  "launch": {"kind": "grid", "grid": ["cdiv(n, 64)", "2 * H"], "workspace_bytes": 64},
  "tensor_maps": )json" +
      maps + "}";
  std::string ptx = makePtx("attention_fwd",
                            {".u64", ".u64", ".u64", ".u32", ".u64", ".u32"});
  for (int i = 0; i < ptxMaps; ++i)
    ptx.insert(ptx.rfind(')'), std::string(", ") + kPtxTensorMap);
  ptx.insert(ptx.rfind(')'), ", .param .u64 workspace");
  return makeBundle(kernel, ptx, "sm_90", 4);
}

/// makeFollowUpBundle() as version 4, with a 1-D tensor map of 'x' on both
/// kernels; its box is 4 in k and `combineBox` in k__combine.
inline std::string makeFollowUpBundleWithMaps(int combineBox = 4) {
  std::string text =
      replaceAll(makeFollowUpBundle(), "\"version\": 2", "\"version\": 4");
  const std::string map =
      R"json("tensor_maps": [{"param": "x", "dims": ["n"], "strides": [], "box": [4]}],
  "launch")json";
  text = replaceAll(text, "\"launch\"", map);
  const std::string box = "\"box\": [4]";
  text.replace(text.rfind(box), box.size(),
               "\"box\": [" + std::to_string(combineBox) + "]");
  return replaceAll(text, ", .param .u64 p2",
                    std::string(", ") + kPtxTensorMap + ", .param .u64 p2");
}

#endif // TESSEL_TEST_TESTBUNDLES_H
