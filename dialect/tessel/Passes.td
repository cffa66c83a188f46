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

#endif // TESSEL_PASSES
