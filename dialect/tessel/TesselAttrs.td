//===- TesselAttrs.td - tessel attributes and enums --------*- tablegen -*-===//

#ifndef TESSEL_ATTRS
#define TESSEL_ATTRS

include "tessel/TesselDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Layout encodings
//===----------------------------------------------------------------------===//

class Tessel_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tessel_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Tessel_BlockedEncodingAttr : Tessel_Attr<"BlockedEncoding", "blocked"> {
  let summary = "Blocked distribution of a tile over threads and warps";
  let description = [{
    Each thread owns `sizePerThread` contiguous elements per dimension, a warp
    is a `threadsPerWarp` grid of threads and a CTA a `warpsPerCTA` grid of
    warps; the pattern repeats to cover the tile. `order` lists dimensions
    from fastest to slowest varying. Chosen so that a thread's elements along
    the fastest dimension make one 16-byte global access. Shared-memory and
    MMA encodings are further attributes next to this one.
  }];
  let parameters = (ins
    ArrayRefParameter<"unsigned">:$sizePerThread,
    ArrayRefParameter<"unsigned">:$threadsPerWarp,
    ArrayRefParameter<"unsigned">:$warpsPerCTA,
    ArrayRefParameter<"unsigned">:$order
  );
  let assemblyFormat = [{
    `<` `sizePerThread` `=` `[` $sizePerThread `]` `,`
        `threadsPerWarp` `=` `[` $threadsPerWarp `]` `,`
        `warpsPerCTA` `=` `[` $warpsPerCTA `]` `,`
        `order` `=` `[` $order `]` `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Tessel_BinaryKindAttr : I32EnumAttr<"BinaryKind", "elementwise binary operation", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"sub", 1>,
    I32EnumAttrCase<"mul", 2>, I32EnumAttrCase<"div", 3>,
    I32EnumAttrCase<"rem", 4>, I32EnumAttrCase<"max", 5>,
    I32EnumAttrCase<"min", 6>, I32EnumAttrCase<"and_", 7, "and">,
    I32EnumAttrCase<"or_", 8, "or">, I32EnumAttrCase<"xor_", 9, "xor">]> {
  let cppNamespace = "::mlir::tessel";
}

def Tessel_UnaryKindAttr : I32EnumAttr<"UnaryKind", "elementwise unary operation", [
    I32EnumAttrCase<"neg", 0>, I32EnumAttrCase<"exp", 1>,
    I32EnumAttrCase<"exp2", 2>, I32EnumAttrCase<"log", 3>,
    I32EnumAttrCase<"log2", 4>, I32EnumAttrCase<"sqrt", 5>,
    I32EnumAttrCase<"rsqrt", 6>, I32EnumAttrCase<"abs", 7>,
    I32EnumAttrCase<"not_", 8, "not">]> {
  let cppNamespace = "::mlir::tessel";
}

def Tessel_CmpPredicateAttr : I32EnumAttr<"CmpPredicate", "elementwise comparison", [
    I32EnumAttrCase<"lt", 0>, I32EnumAttrCase<"le", 1>,
    I32EnumAttrCase<"gt", 2>, I32EnumAttrCase<"ge", 3>,
    I32EnumAttrCase<"eq", 4>, I32EnumAttrCase<"ne", 5>]> {
  let cppNamespace = "::mlir::tessel";
}

def Tessel_ReduceKindAttr : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>]> {
  let cppNamespace = "::mlir::tessel";
}

#endif // TESSEL_ATTRS
