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

#endif // TESSEL_TEST_TESTBUNDLES_H
