//===- Passes.td - tessel passes ---------------------------*- tablegen -*-===//

#ifndef TESSEL_PASSES
#define TESSEL_PASSES

include "mlir/Pass/PassBase.td"

def TesselExpandOnline : Pass<"tessel-expand-online", "ModuleOp"> {
  let summary = "Expand the online-softmax and coupled-KL ops into tile arithmetic";
  let description = [{
    Every online state becomes the tiles it consists of — (m, l, acc) for an
    online softmax and (mₛ, lₛ, mₜ, lₜ, A) for the coupled KL — through
    scf.for/scf.if and tessel.stream_k regions, and every online op becomes
    max/exp/sum/dot on tiles. Rows that saw only −∞ keep l = 0 and never
    produce NaN: exponents are taken against a max that is 0 for such rows.
    Online-softmax probabilities are rounded to the element type of V
    before their product with V, as a tensor-core kernel does.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TesselLowerStreamK : Pass<"tessel-lower-stream-k", "ModuleOp"> {
  let summary = "Lower tessel.stream_k to a persistent grid with a partial-state workspace";
  let description = [{
    Runs after tessel-expand-online (states must be tiles or scalars). The
    units × iters iterations are linearised; program p of G owns
    [p·T/G, (p+1)·T/G) with T = units·iters. For each unit its range
    touches, a program runs the body on its slice; the program that holds
    the unit's first iteration (its host) merges, in order, the partial
    states of the higher programs that share the unit — waiting on their
    arrival flags — and runs the epilogue; any other program stores its
    partial state to its workspace slot and sets its flag. Waits only go to
    higher program ids, so a grid no larger than the co-resident CTAs
    cannot deadlock.

    The kernel gains one workspace pointer per state value and a flag
    pointer (i32), in that order, and is marked
    `tessel.launch = "persistent"` with `tessel.workspace` giving the
    elements per program of each of those pointers.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // TESSEL_PASSES
