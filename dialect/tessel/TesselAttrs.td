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

def Tessel_LayoutEncodingAttrInterface
    : AttrInterface<"LayoutEncodingAttrInterface"> {
  let cppNamespace = "::mlir::tessel";
  let description = [{
    A layout encoding of a tile type: says how the tile's elements are
    spread over the threads (or the shared memory) of a CTA. The tile type
    accepts any attribute implementing it, so new encodings (shared, MMA
    accumulator and operand) need no change to the type.
  }];
  let methods = [
    InterfaceMethod<"Rank of the tiles this encoding distributes.",
                    "unsigned", "getRank">
  ];
}

def Tessel_BlockedEncodingAttr : Tessel_Attr<"BlockedEncoding", "blocked",
    [DeclareAttrInterfaceMethods<Tessel_LayoutEncodingAttrInterface>]> {
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

def Tessel_SliceEncodingAttr : Tessel_Attr<"SliceEncoding", "slice",
    [DeclareAttrInterfaceMethods<Tessel_LayoutEncodingAttrInterface>]> {
  let summary = "A parent layout with one dimension removed";
  let description = [{
    A tile of rank r in `#tessel.slice<dim = d, parent = P>` is held as P
    holds a tile of rank r + 1 whose dimension `d` has size 1: the threads
    that differ only along `d` in P hold the same elements. It is the layout
    of a reduction along `d` of a P tile and of the operand of an
    expand_dims at `d` into P, so both are free of data movement (Triton's
    SliceEncoding).
  }];
  let parameters = (ins "unsigned":$dim, "Attribute":$parent);
  let assemblyFormat = "`<` `dim` `=` $dim `,` `parent` `=` $parent `>`";
  let genVerifyDecl = 1;
}

def Tessel_MmaEncodingAttr : Tessel_Attr<"MmaEncoding", "mma",
    [DeclareAttrInterfaceMethods<Tessel_LayoutEncodingAttrInterface>]> {
  let summary = "The accumulator fragments of mma.sync m16n8k16";
  let description = [{
    A 2-D tile held as the C/D registers of `mma.sync.m16n8k16` (sm_80+):
    the warps form a `warpsPerCTA = [wm, wn]` grid (warp w at row w % wm,
    column w / wm) over the tile's 16x8 blocks, block (i, j) going to warp
    (i % wm, j % wn); within a block, lane 4g + t holds rows g and g + 8 at
    columns 2t and 2t + 1. A dot computes into this layout and reads its
    accumulator from it, so attention's scores, probabilities and output
    never leave registers (the FlashAttention-2 dataflow).

    `columnRun = 4` (Hopper's warpgroup MMA only) gives each lane runs of
    four adjacent columns instead: lane 4g + t holds columns 4t .. 4t + 3 of
    each 16-column block, the blocks going to the warps along N in turn. The
    hardware writes its accumulators in the layout above, so such a dot
    reads B with its columns in the order that puts each element where this
    layout wants it (a !tessel.memdesc with `columns`): what an f32 reduction
    or store of the result then needs to move 16 bytes per instruction
    without trading halves between lanes.
  }];
  let parameters = (ins ArrayRefParameter<"unsigned">:$warpsPerCTA,
                        DefaultValuedParameter<"unsigned", "2">:$columnRun);
  let builders = [
    AttrBuilder<(ins "ArrayRef<unsigned>":$warpsPerCTA), [{
      return $_get($_ctxt, warpsPerCTA, /*columnRun=*/2);
    }]>
  ];
  let assemblyFormat = [{
    `<` `warpsPerCTA` `=` `[` $warpsPerCTA `]` (`,` `columnRun` `=` $columnRun^)? `>`
  }];
  let genVerifyDecl = 1;
}

// An #tessel.mma parameter printed and parsed in full (not stripped of its
// mnemonic), as the other layouts' parents are.
def Tessel_MmaParameter : AttrParameter<"MmaEncodingAttr", "an #tessel.mma layout"> {
  let printer = "$_printer.printAttribute($_self)";
  let parser = [{ [&]() -> ::mlir::FailureOr<MmaEncodingAttr> {
    ::mlir::Attribute attr;
    ::llvm::SMLoc loc = $_parser.getCurrentLocation();
    if ($_parser.parseAttribute(attr))
      return ::mlir::failure();
    if (auto mma = ::llvm::dyn_cast<MmaEncodingAttr>(attr))
      return mma;
    return $_parser.emitError(loc, "expected an #tessel.mma layout, got ") << attr;
  }() }];
}

def Tessel_DotOperandEncodingAttr : Tessel_Attr<"DotOperandEncoding",
    "dot_operand",
    [DeclareAttrInterfaceMethods<Tessel_LayoutEncodingAttrInterface>]> {
  let summary = "The A or B operand fragments of mma.sync m16n8k16";
  let description = [{
    Operand `opIdx` (0: A, MxK; 1: B, KxN) of a dot whose result has the
    #tessel.mma layout `parent`, as the 16-bit registers of
    `mma.sync.m16n8k16.row.col` hold it: the warps that share rows (A) or
    columns (B) of the result hold the same fragments. An A operand in this
    layout feeds the tensor cores without moving data; an #tessel.mma tile
    of the same rows with one warp along N is already in it (P of
    attention goes from the first dot to the second in registers).
  }];
  let parameters = (ins "unsigned":$opIdx, Tessel_MmaParameter:$parent);
  let assemblyFormat = "`<` `opIdx` `=` $opIdx `,` `parent` `=` $parent `>`";
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
    I32EnumAttrCase<"or_", 8, "or">, I32EnumAttrCase<"xor_", 9, "xor">,
    I32EnumAttrCase<"shl", 10>, I32EnumAttrCase<"shr", 11>]> {
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

// The names are the spelling of tessel-lower-stream-k's `strategy` option
// and of the tools' --stream-k flag.
def Tessel_StreamKStrategyAttr : I32EnumAttr<"StreamKStrategy",
    "how tessel-lower-stream-k shares a unit's iterations", [
    I32EnumAttrCase<"Persistent", 0, "persistent">,
    I32EnumAttrCase<"SplitK", 1, "split-k">]> {
  let cppNamespace = "::mlir::tessel";
}

#endif // TESSEL_ATTRS
