//===- BundleWriterTest.cpp - The bundles the compiler writes -------------===//
//
// Inputs/tensor_maps.bundle and Inputs/clusters.bundle are this writer's
// output; the runtime's BundleTest reads the same files, so the two halves
// of the format agree.
//
//===----------------------------------------------------------------------===//

#include "Conversion/NVPTX/GPUCompile.h"

#include "TestBundles.h"

#include <gtest/gtest.h>

using namespace tessel;

namespace {

/// attention_fwd(q, k: f16 ptr, o: f32 ptr, Nk, HKV, H: i32, skn, skh, skb:
/// i64), D = 64, with tensor maps of k (4-D, swizzled) and q (2-D).
CompiledKernel tensorMapKernel() {
  CompiledKernel k;
  k.name = "attention_fwd";
  k.numWarps = 8;
  k.sharedBytes = 49152;
  k.params = {{"q", "ptr", "f16", 16}, {"k", "ptr", "f16"}, {"o", "ptr", "f32"},
              {"Nk", "i32", ""},       {"HKV", "i32", ""},  {"H", "i32", ""},
              {"skn", "i64", ""},      {"skh", "i64", ""},  {"skb", "i64", ""}};
  k.constants = {{"D", 64}};
  k.tensorMaps = {{"k",
                   {"D", "Nk", "HKV", "grid_y / H"},
                   {"skn", "skh", "skb"},
                   {64, 64, 1, 1},
                   128},
                  {"q", {"D", "Nk"}, {"skn"}, {64, 32}}};
  return k;
}

const char *const kTensorMapPtx =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry attention_fwd(\n"
    "\t.param .u64 p0,\n\t.param .u64 p1,\n\t.param .u64 p2,\n"
    "\t.param .u32 p3,\n\t.param .u32 p4,\n\t.param .u32 p5,\n"
    "\t.param .u64 p6,\n\t.param .u64 p7,\n\t.param .u64 p8,\n"
    "\t.param .align 64 .b8 attention_fwd_tma_0[128],\n"
    "\t.param .align 64 .b8 attention_fwd_tma_1[128]\n"
    ")\n{\n\tret;\n}\n";

} // namespace

TEST(BundleWriter, TensorMapsMakeVersion4) {
  std::string text =
      writeBundle({tensorMapKernel()}, kTensorMapPtx, "sm_90a", "tesselc test");
  EXPECT_EQ(text, readInput("tensor_maps.bundle"));
}

TEST(BundleWriter, WithoutTensorMapsTheMemberIsLeftOut) {
  CompiledKernel k = tensorMapKernel();
  k.tensorMaps.clear();
  std::string text = writeBundle({k}, "", "sm_90a", "tesselc test");
  EXPECT_EQ(text.find("tensor_maps"), std::string::npos) << text;
  EXPECT_NE(text.find("\"version\": 3,"), std::string::npos) << text;
  // Tensor maps need version 4 whatever else the bundle uses.
  CompiledKernel plain = k;
  plain.params = {{"x", "ptr", "f16"}};
  plain.tensorMaps = {{"x", {"64"}, {}, {64}}};
  text = writeBundle({plain}, "", "sm_90a", "tesselc test");
  EXPECT_NE(text.find("\"version\": 4,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"tensor_maps\": [\n        {\"param\": \"x\", "
                      "\"dims\": [\"64\"], \"strides\": [], \"box\": [64], "
                      "\"swizzle\": 0}\n      ]\n    }"),
            std::string::npos)
      << text;
}

namespace {

const char *const kClusterPtx =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry split(\n\t.param .u64 p0,\n\t.param .u32 p1\n)\n"
    ".reqnctapercluster 2, 1, 1\n{\n\tret;\n}\n"
    ".visible .entry reduce(\n\t.param .u64 p0,\n\t.param .u32 p1,\n"
    "\t.param .u64 p2\n)\n.reqnctapercluster 16, 1, 1\n{\n\tret;\n}\n";

/// split(x: f32 ptr, n: i32), a grid kernel in clusters of 2, and reduce,
/// the same persistent with a workspace in clusters of 16.
std::vector<CompiledKernel> clusterKernels() {
  CompiledKernel split;
  split.name = "split";
  split.params = {{"x", "ptr", "f32"}, {"n", "i32", ""}};
  split.cluster = 2;
  CompiledKernel reduce = split;
  reduce.name = "reduce";
  reduce.persistent = true;
  reduce.workspacePerProgram = 16;
  reduce.cluster = 16;
  return {split, reduce};
}

} // namespace

TEST(BundleWriter, ClustersMakeVersion6) {
  std::string text =
      writeBundle(clusterKernels(), kClusterPtx, "sm_90a", "tesselc test");
  EXPECT_EQ(text, readInput("clusters.bundle"));
  // Without clusters the member is left out and the version is the rest's.
  std::vector<CompiledKernel> kernels = clusterKernels();
  for (CompiledKernel &k : kernels)
    k.cluster = 1;
  text = writeBundle(kernels, kClusterPtx, "sm_90a", "tesselc test");
  EXPECT_EQ(text.find("cluster\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"version\": 5,"), std::string::npos) << text;
  kernels.pop_back();
  kernels[0].cluster = 8;
  text = writeBundle(kernels, kClusterPtx, "sm_90a", "tesselc test");
  EXPECT_NE(text.find("\"version\": 6,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"launch\": {\"kind\": \"grid\", \"cluster\": 8}"),
            std::string::npos)
      << text;
}
