// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm -verify-diagnostics | FileCheck %s

// 224 KB of buffers: within what a Hopper GPU grants one CTA (227 KB).
// CHECK-LABEL: llvm.func @fits
func.func @fits() attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %buf = tessel.local_alloc : !tessel.memdesc<112x1024xf16, order = [1, 0]>
  return
}

// -----

// 240 KB: no GPU grants a CTA that much, so the kernel could never launch;
// the compiler says so, naming the kernel (its DSL location in a .tsl).
// expected-error @below {{kernel 'too_big' needs 245760 bytes of shared memory per CTA; no GPU allows more than 232448 (smaller tiles or fewer stages)}}
func.func @too_big() attributes {tessel.kernel, tessel.num_warps = 4 : i32} {
  %buf = tessel.local_alloc : !tessel.memdesc<120x1024xf16, order = [1, 0]>
  return
}
