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
                              const std::string &target = "sm_90") {
  return "{\"format\": \"tessel-bundle\", \"version\": 1, \"target\": \"" +
         target + "\",\n \"kernels\": [" + kernel + "],\n \"ptx\": \"" + ptx +
         "\"}";
}

#endif // TESSEL_TEST_TESTBUNDLES_H
