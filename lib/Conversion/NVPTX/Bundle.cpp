//===- Bundle.cpp - Kernel bundles for the runtime ------------------------===//

#include "Conversion/NVPTX/GPUCompile.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace tessel;

/// A JSON string literal.
static std::string quote(llvm::StringRef s) {
  std::string out = "\"";
  llvm::raw_string_ostream os(out);
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      os << "\\\"";
      break;
    case '\\':
      os << "\\\\";
      break;
    case '\n':
      os << "\\n";
      break;
    case '\t':
      os << "\\t";
      break;
    default:
      if (c < 0x20)
        os << llvm::format("\\u%04x", c);
      else
        os << c;
    }
  }
  os << '"';
  return out;
}

/// Grid kernels carry no grid expression: their grids depend on values the
/// kernel does not receive (a batch size, say), so the host passes the grid
/// at launch. Persistent kernels ask for their workspace per CTA.
static void writeLaunch(llvm::raw_ostream &os, const CompiledKernel &k) {
  os << "{\"kind\": " << (k.persistent ? "\"persistent\"" : "\"grid\"");
  if (k.cluster > 1)
    os << ", \"cluster\": " << k.cluster;
  if (!k.persistent) {
    os << "}";
    return;
  }
  // Stream-K kernels clear every arrival counter they wait on, and split-K
  // kernels have none: the workspace needs zeroing only once per size.
  if (k.workspacePerProgram)
    os << ", \"workspace_bytes\": \"" << k.workspacePerProgram
       << " * num_ctas\", \"workspace_zeroing\": \"per_size\"";
  if (!k.then.empty())
    os << ", \"then\": " << quote(k.then);
  os << "}";
}

/// A JSON array of `values`, each written by `write`.
template <class T, class Write>
static void writeArray(llvm::raw_ostream &os, const std::vector<T> &values,
                       Write write) {
  os << "[";
  for (auto [i, v] : llvm::enumerate(values)) {
    os << (i ? ", " : "");
    write(v);
  }
  os << "]";
}

static void writeTensorMap(llvm::raw_ostream &os,
                           const CompiledKernel::TensorMap &map) {
  auto string = [&](const std::string &s) { os << quote(s); };
  os << "{\"param\": " << quote(map.param) << ", \"dims\": ";
  writeArray(os, map.dims, string);
  os << ", \"strides\": ";
  writeArray(os, map.strides, string);
  os << ", \"box\": ";
  writeArray(os, map.box, [&](int64_t b) { os << b; });
  os << ", \"swizzle\": " << map.swizzle << "}";
}

static void writeKernel(llvm::raw_ostream &os, const CompiledKernel &k) {
  os << "    {\n"
     << "      \"name\": " << quote(k.name) << ",\n"
     << "      \"ptx_entry\": " << quote(k.name) << ",\n"
     << "      \"num_warps\": " << k.numWarps << ",\n"
     << "      \"shared_bytes\": " << k.sharedBytes << ",\n"
     << "      \"params\": [";
  for (auto [i, p] : llvm::enumerate(k.params)) {
    os << (i ? ",\n" : "\n") << "        {\"name\": " << quote(p.name)
       << ", \"kind\": " << quote(p.kind);
    if (!p.elem.empty())
      os << ", \"elem\": " << quote(p.elem);
    if (p.multipleOf)
      os << ", \"multiple_of\": " << p.multipleOf;
    if (p.none)
      os << ", \"none\": true";
    os << "}";
  }
  os << (k.params.empty() ? "],\n" : "\n      ],\n")
     << "      \"constants\": {";
  for (auto [i, c] : llvm::enumerate(k.constants))
    os << (i ? ", " : "") << quote(c.first) << ": " << c.second;
  os << "},\n      \"launch\": ";
  writeLaunch(os, k);
  if (!k.tensorMaps.empty()) {
    os << ",\n      \"tensor_maps\": [";
    for (auto [i, map] : llvm::enumerate(k.tensorMaps)) {
      os << (i ? ",\n" : "\n") << "        ";
      writeTensorMap(os, map);
    }
    os << "\n      ]";
  }
  os << "\n    }";
}

std::string tessel::writeBundle(const std::vector<CompiledKernel> &kernels,
                                llvm::StringRef ptx, llvm::StringRef target,
                                llvm::StringRef producer) {
  // Version 2 added "then", version 3 "multiple_of", version 4
  // "tensor_maps", version 5 "workspace_zeroing", version 6 "cluster",
  // version 7 "none": a bundle gets the lowest version that has what it
  // uses, so it stays readable by older runtimes.
  bool followUps = llvm::any_of(
      kernels, [](const CompiledKernel &k) { return !k.then.empty(); });
  bool hints = llvm::any_of(kernels, [](const CompiledKernel &k) {
    return llvm::any_of(k.params, [](const CompiledKernel::Param &p) {
      return p.multipleOf != 0;
    });
  });
  bool tensorMaps = llvm::any_of(
      kernels, [](const CompiledKernel &k) { return !k.tensorMaps.empty(); });
  bool workspaces = llvm::any_of(kernels, [](const CompiledKernel &k) {
    return k.workspacePerProgram != 0;
  });
  bool clusters = llvm::any_of(
      kernels, [](const CompiledKernel &k) { return k.cluster > 1; });
  bool nones = llvm::any_of(kernels, [](const CompiledKernel &k) {
    return llvm::any_of(k.params,
                        [](const CompiledKernel::Param &p) { return p.none; });
  });
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "{\n"
     << "  \"format\": \"tessel-bundle\",\n"
     << "  \"version\": "
     << (nones        ? 7
         : clusters   ? 6
         : workspaces ? 5
         : tensorMaps ? 4
         : hints      ? 3
         : followUps  ? 2
                      : 1)
     << ",\n"
     << "  \"target\": " << quote(target) << ",\n"
     << "  \"producer\": " << quote(producer) << ",\n"
     << "  \"kernels\": [\n";
  for (auto [i, k] : llvm::enumerate(kernels)) {
    writeKernel(os, k);
    os << (i + 1 < kernels.size() ? ",\n" : "\n");
  }
  os << "  ],\n"
     << "  \"ptx\": " << quote(ptx) << "\n"
     << "}\n";
  return out;
}
