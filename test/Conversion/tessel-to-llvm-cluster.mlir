// RUN: tessel-opt %s -split-input-file -convert-tessel-to-llvm -verify-diagnostics | FileCheck %s

// A thread-block cluster's kernel: .reqnctapercluster through nvvm.cluster_dim;
// the shared buffer a region of the kernel's shared memory (here at 0: the
// kernel has no scratch area), addressed generically; cluster_map is mapa on that
// generic address; accesses through it are generic ld/st; the cluster
// barrier is barrier.cluster's aligned arrive (relaxed or release) and wait.
// CHECK-LABEL: llvm.func @cluster
// CHECK-SAME: nvvm.cluster_dim = array<i32: 4, 1, 1>
// CHECK: %[[SMEM:.*]] = llvm.mlir.addressof @tessel_smem : !llvm.ptr<3>
// CHECK: %[[REGION:.*]] = llvm.getelementptr %[[SMEM]][0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK: %[[BUF:.*]] = llvm.addrspacecast %[[REGION]] : !llvm.ptr<3> to !llvm.ptr
// CHECK: nvvm.cluster.arrive.relaxed {aligned}
// CHECK: nvvm.cluster.wait {aligned}
// CHECK: %[[PEER:.*]] = nvvm.mapa %[[BUF]], %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.inline_asm has_side_effects {{.*}}"@$2 st.b32 [ $0 + 0 ], $1;", "l,r,b" %[[PEER]]
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK: nvvm.cluster.wait {aligned}
// CHECK: llvm.load %[[BUF]] : !llvm.ptr -> f32
// CHECK: st.global.b32
module attributes {tessel.target = "sm_90a"} {
  func.func @cluster(%rank: i32, %x: f32, %out: !tessel.ptr<f32>) attributes {tessel.kernel, tessel.cluster = 4 : i64} {
    %buf = tessel.shared_buffer elements(64) : !tessel.ptr<f32, shared>
    tessel.cluster_arrive {relaxed}
    tessel.cluster_wait
    %peer = tessel.cluster_map %buf, %rank : !tessel.ptr<f32, shared>
    tessel.store %peer, %x : !tessel.ptr<f32, shared>
    tessel.cluster_arrive
    tessel.cluster_wait
    %y = tessel.load %buf : !tessel.ptr<f32, shared>
    tessel.store %out, %y : !tessel.ptr<f32>
    return
  }
}

// -----

// Clusters need sm_90.
module attributes {tessel.target = "sm_80"} {
  // expected-error @below {{kernel 'old' runs in thread-block clusters, which need sm_90 or later; the target is sm_80}}
  func.func @old() attributes {tessel.kernel, tessel.cluster = 2 : i64} {
    return
  }
}
