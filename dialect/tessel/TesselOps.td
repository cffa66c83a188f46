//===- TesselOps.td - tessel operations --------------------*- tablegen -*-===//

#ifndef TESSEL_OPS
#define TESSEL_OPS

include "tessel/TesselDialect.td"
include "tessel/TesselTypes.td"
include "tessel/TesselAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Program identity
//===----------------------------------------------------------------------===//

class Tessel_GridQueryOp<string mnemonic> : Tessel_Op<mnemonic, [Pure]> {
  let arguments = (ins ConfinedAttr<I32Attr, [IntNonNegative, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tessel_ProgramIdOp : Tessel_GridQueryOp<"program_id"> {
  let summary = "Index of this program (CTA) along a grid axis";
}

def Tessel_NumProgramsOp : Tessel_GridQueryOp<"num_programs"> {
  let summary = "Number of programs (CTAs) along a grid axis";
}

def Tessel_ClockOp : Tessel_Op<"clock"> {
  let summary = "The multiprocessor's cycle counter, for timing a kernel's phases";
  let description = [{
    The running thread's multiprocessor's 64-bit cycle counter on the GPU
    (PTX `%clock64`; counters of different multiprocessors are not
    synchronised), nanoseconds of a monotonic clock on the interpreter. A
    kernel times its phases by storing readings, under a test of a pointer
    compiled as None when not timing. Its unknown effects keep it where the
    program puts it: it is neither merged with another reading, nor moved
    out of a loop, nor removed when unused.
  }];
  let results = (outs I64:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Tile construction and shape manipulation
//===----------------------------------------------------------------------===//

def Tessel_ArangeOp : Tessel_Op<"arange", [Pure]> {
  let summary = "Tile of consecutive i32 values [start, end)";
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs Tessel_IntTile:$result);
  let assemblyFormat = "$start `,` $end attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tessel_SplatOp : Tessel_Op<"splat", [Pure]> {
  let summary = "Tile with every element equal to a scalar";
  let arguments = (ins AnyType:$src);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_BroadcastOp : Tessel_Op<"broadcast", [Pure]> {
  let summary = "Expand dimensions of size 1 to a larger size";
  let arguments = (ins Tessel_Tile:$src);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_ExpandDimsOp : Tessel_Op<"expand_dims", [Pure]> {
  let summary = "Insert a dimension of size 1 at `axis`";
  let arguments = (ins Tessel_Tile:$src, I32Attr:$axis);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_ReshapeOp : Tessel_Op<"reshape", [Pure]> {
  let summary = "Reinterpret a tile with another shape of the same size (row-major)";
  let arguments = (ins Tessel_Tile:$src);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_TransOp : Tessel_Op<"trans", [Pure]> {
  let summary = "Permute the dimensions of a tile";
  let description = [{
    Result dimension i is source dimension `order[i]`.
  }];
  let arguments = (ins Tessel_Tile:$src, DenseI32ArrayAttr:$order);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$src $order attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_ExtractSliceOp : Tessel_Op<"extract_slice", [Pure]> {
  let summary = "Sub-tile of static shape at constant or runtime offsets";
  let description = [{
    Used for overlapping (halo) tiles: the result's shape is the slice size
    and the offsets its origin inside the source, each a constant or an i32
    value (`[%a, 3]`). A runtime offset must keep the slice inside the
    source: the interpreter reports one that does not, compiled code clamps
    it into [0, source size - slice size].
  }];
  let arguments = (ins Tessel_Tile:$src, Variadic<I32>:$offsets,
                       DenseI64ArrayAttr:$static_offsets);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = [{
    $src custom<DynamicIndexList>($offsets, $static_offsets) attr-dict `:`
    type($src) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Type":$result, "Value":$src, "ArrayRef<int64_t>":$offsets), [{
      build($_builder, $_state, result, src, ValueRange(), offsets);
    }]>
  ];
  let hasVerifier = 1;
}

def Tessel_ConvertLayoutOp : Tessel_Op<"convert_layout", [Pure]> {
  let summary = "Change the layout encoding of a tile, keeping its values";
  let arguments = (ins Tessel_Tile:$src);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def Tessel_BinaryOp : Tessel_Op<"binary", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise binary arithmetic on tiles";
  let description = [{
    Integer or float according to the element type. Integer `div` and `rem`
    truncate toward zero; `and`, `or`, `xor`, `shl` and `shr` are
    integer-only. `shr` is arithmetic (the sign bit fills), as Python's `>>`;
    a shift by a negative amount or by the element's width or more is
    undefined (the interpreter reports it).
  }];
  let arguments = (ins Tessel_BinaryKindAttr:$kind, Tessel_Tile:$lhs, Tessel_Tile:$rhs);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$kind $lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tessel_UnaryOp : Tessel_Op<"unary", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise unary math on tiles";
  let description = [{
    `neg` and `abs` accept any element type, `not` integers, the rest floats.

    `ftz` (exp and exp2 only) lets subnormal inputs and results flush to
    zero, which spares the GPU the range fix-up around its exponential unit
    (PTX's `.ftz`). The online reductions set it: their exponentials are
    relative to a running max, so a result below 2^-126 is lost in the sum
    anyway. The DSL's `exp(x, ftz=True)` and `exp2(x, ftz=True)` set it too.
  }];
  let arguments = (ins Tessel_UnaryKindAttr:$kind, Tessel_Tile:$src,
                       UnitAttr:$ftz);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$kind (`ftz` $ftz^)? $src attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tessel_CmpOp : Tessel_Op<"cmp", [Pure, SameTypeOperands]> {
  let summary = "Elementwise comparison producing a tile of i1";
  let arguments = (ins Tessel_CmpPredicateAttr:$predicate, Tessel_Tile:$lhs,
                       Tessel_Tile:$rhs);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$predicate $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_SelectOp : Tessel_Op<"select", [Pure, AllTypesMatch<["trueValue", "falseValue", "result"]>]> {
  let summary = "Elementwise choice between two tiles by an i1 tile";
  let arguments = (ins Tessel_Tile:$condition, Tessel_Tile:$trueValue,
                       Tessel_Tile:$falseValue);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = [{
    $condition `,` $trueValue `,` $falseValue attr-dict `:` type($condition) `,` type($result)
  }];
  let hasVerifier = 1;
}

def Tessel_CastOp : Tessel_Op<"cast", [Pure]> {
  let summary = "Elementwise conversion between scalar element types";
  let description = [{
    Float to float rounds to nearest even; float to integer truncates toward
    zero; integers are sign-extended or truncated; i1 converts to 0 or 1.
  }];
  let arguments = (ins Tessel_Tile:$src);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def Tessel_AddPtrOp : Tessel_Op<"addptr", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "Advance pointers by element offsets";
  let arguments = (ins Tessel_PtrLike:$ptr, Tessel_IntLike:$offset);
  let results = (outs Tessel_PtrLike:$result);
  let assemblyFormat = "$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset)";
  let hasVerifier = 1;
}

def Tessel_LoadOp : Tessel_Op<"load", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead]>,
    TypesMatchWith<"result holds the pointees", "ptr", "result",
                   "::mlir::tessel::getPointeeLikeType($_self)">,
    TypesMatchWith<"mask is i1 of the pointers' shape", "ptr", "mask",
                   "::mlir::tessel::getMaskLikeType($_self)",
                   "($_op.getOperands().size() <= 1) || std::equal_to<>()">,
    TypesMatchWith<"other has the result's type", "ptr", "other",
                   "::mlir::tessel::getPointeeLikeType($_self)",
                   "($_op.getOperands().size() <= 2) || std::equal_to<>()">]> {
  let summary = "Load from global memory, with an optional mask";
  let description = [{
    Lanes where `mask` is false are not accessed and yield `other` (zero when
    `other` is absent). `other` needs a mask.
  }];
  let arguments = (ins Tessel_PtrLike:$ptr, Optional<Tessel_MaskLike>:$mask,
                       Optional<AnyType>:$other);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $ptr (`mask` $mask^)? (`other` $other^)? attr-dict `:` type($ptr)
  }];
  let hasVerifier = 1;
}

def Tessel_MakeTensorDescOp : Tessel_Op<"make_tensor_desc", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "Describe a strided array in global memory for block loads";
  let description = [{
    The array at `base` has `shape[i]` elements along dimension i; moving
    one index along dimension i < rank - 1 moves `strides[i]` elements, and
    the innermost dimension is contiguous (its stride, 1, is not written).
    `base`'s pointee is the descriptor's element type.
  }];
  let arguments = (ins Tessel_PtrLike:$base, Variadic<I64>:$shape,
                       Variadic<I64>:$strides);
  let results = (outs Tessel_TensorDesc:$result);
  let assemblyFormat = [{
    $base `,` `[` $shape `]` `,` `[` $strides `]` attr-dict `:` type($base)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tessel_LoadBlockOp : Tessel_Op<"load_block", [MemoryEffects<[MemRead]>]> {
  let summary = "Load the block of a tensor descriptor that starts at `coords`";
  let description = [{
    Element k of the result is the array element at coords + the block index
    of k (the block's unit dimensions dropped from the result, see
    TensorDescType); elements outside the array (an index below 0 or at
    or past its size, in any dimension) are 0 and are not read.
  }];
  let arguments = (ins Tessel_TensorDesc:$desc, Variadic<I32>:$coords);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = [{
    $desc `[` $coords `]` attr-dict `:` type($desc) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tessel_StoreOp : Tessel_Op<"store", [
    MemoryEffects<[MemWrite]>,
    TypesMatchWith<"value holds the pointees", "ptr", "value",
                   "::mlir::tessel::getPointeeLikeType($_self)">,
    TypesMatchWith<"mask is i1 of the pointers' shape", "ptr", "mask",
                   "::mlir::tessel::getMaskLikeType($_self)",
                   "($_op.getOperands().size() <= 2) || std::equal_to<>()">]> {
  let summary = "Store to global memory, with an optional mask";
  let arguments = (ins Tessel_PtrLike:$ptr, AnyType:$value,
                       Optional<Tessel_MaskLike>:$mask);
  let assemblyFormat = "$ptr `,` $value (`mask` $mask^)? attr-dict `:` type($ptr)";
}

def Tessel_AtomicAddOp : Tessel_Op<"atomic_add", [
    MemoryEffects<[MemRead, MemWrite]>,
    TypesMatchWith<"value holds the pointees", "ptr", "value",
                   "::mlir::tessel::getPointeeLikeType($_self)">,
    TypesMatchWith<"result holds the pointees", "ptr", "result",
                   "::mlir::tessel::getPointeeLikeType($_self)">,
    TypesMatchWith<"mask is i1 of the pointers' shape", "ptr", "mask",
                   "::mlir::tessel::getMaskLikeType($_self)",
                   "($_op.getOperands().size() <= 2) || std::equal_to<>()">]> {
  let summary = "Atomically add to global memory; returns the old values";
  let arguments = (ins Tessel_PtrLike:$ptr, AnyType:$value,
                       Optional<Tessel_MaskLike>:$mask);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$ptr `,` $value (`mask` $mask^)? attr-dict `:` type($ptr)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix product and reductions
//===----------------------------------------------------------------------===//

def Tessel_DotOp : Tessel_Op<"dot", [AllTypesMatch<["acc", "result"]>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<ConditionallySpeculatable>]> {
  let summary = "Matrix product with f32 accumulation: result = a·b + acc";
  let description = [{
    `b` may be a tile or, after tessel-pipeline, a `!tessel.memdesc` in
    shared memory (read where the dot runs: the op is then a read of shared
    memory, not pure).
  }];
  let arguments = (ins Tessel_Tile:$a, Tessel_TileOrMemDesc:$b, Tessel_Tile:$acc);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tessel_ReduceOp : Tessel_Op<"reduce", [Pure]> {
  let summary = "Reduce a tile along one axis";
  let description = [{
    The result drops dimension `axis`; reducing a 1-D tile gives a scalar.
    `max` of an all −∞ row is −∞; `sum` of an empty row is 0.
  }];
  let arguments = (ins Tessel_ReduceKindAttr:$kind, Tessel_Tile:$src, I32Attr:$axis);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$kind $src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Online reductions
//===----------------------------------------------------------------------===//

def Tessel_SoftmaxInitOp : Tessel_Op<"softmax_init", [Pure]> {
  let summary = "Empty online-softmax state: m = −∞, l = 0, acc = 0";
  let results = (outs Tessel_SoftmaxState:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tessel_OnlineSoftmaxOp : Tessel_Op<"online_softmax", [Pure, AllTypesMatch<["state", "result"]>]> {
  let summary = "Fold a block of scores and values into an online-softmax state";
  let description = [{
    With scores S (rows × n, f32, −∞ where masked) and values V (n × cols):
    m′ = max(m, rowmax S), l′ = l·e^(m−m′) + Σ e^(S−m′),
    acc′ = acc·e^(m−m′) + P·V with P = e^(S−m′) rounded to V's element type
    (as a tensor-core kernel feeds it to the MMA) and the product
    accumulated in f32. Exponents are taken against m′, or 0 for rows whose
    scores are all −∞ so far: such rows keep l = 0 and acc = 0, never NaN.
  }];
  let arguments = (ins Tessel_SoftmaxState:$state, Tessel_Tile:$scores,
                       Tessel_Tile:$values);
  let results = (outs Tessel_SoftmaxState:$result);
  let assemblyFormat = [{
    $state `,` $scores `,` $values attr-dict `:` type($state) `,` type($scores) `,` type($values)
  }];
  let hasVerifier = 1;
}

def Tessel_SoftmaxMergeOp : Tessel_Op<"softmax_merge", [Pure, SameOperandsAndResultType]> {
  let summary = "Merge two online-softmax states (associative)";
  let arguments = (ins Tessel_SoftmaxState:$lhs, Tessel_SoftmaxState:$rhs);
  let results = (outs Tessel_SoftmaxState:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Tessel_SoftmaxFinalizeOp : Tessel_Op<"softmax_finalize", [Pure]> {
  let summary = "Normalised output acc/l (rows × cols) and log-sum-exp m + log l (rows)";
  let description = [{
    Rows that saw no unmasked score give o = 0 and lse = −∞. The output is
    acc · (1/l), both rounded to f32: a reciprocal per row, a product per
    element.
  }];
  let arguments = (ins Tessel_SoftmaxState:$state);
  let results = (outs Tessel_Tile:$output, Tessel_Tile:$lse);
  let assemblyFormat = "$state attr-dict `:` type($state) `->` type($output) `,` type($lse)";
  let hasVerifier = 1;
}

def Tessel_KLInitOp : Tessel_Op<"kl_init", [Pure]> {
  let summary = "Empty coupled-KL state: mₛ = mₜ = −∞, lₛ = lₜ = A = 0";
  let results = (outs Tessel_KLState:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tessel_OnlineKLOp : Tessel_Op<"online_kl", [Pure, AllTypesMatch<["state", "result"]>]> {
  let summary = "Fold a block of teacher and student scores into a coupled-KL state";
  let description = [{
    With teacher scores s and student scores t (rows × n, f32, −∞ where
    masked in both): mₛ′ = max(mₛ, rowmax s), A′ = A·e^(mₛ−mₛ′) +
    Σ e^(s−mₛ′)(s − t), lₛ′ = lₛ·e^(mₛ−mₛ′) + Σ e^(s−mₛ′), and lₜ likewise
    with t. Masked entries contribute nothing.
  }];
  let arguments = (ins Tessel_KLState:$state, Tessel_Tile:$teacher,
                       Tessel_Tile:$student);
  let results = (outs Tessel_KLState:$result);
  let assemblyFormat = [{
    $state `,` $teacher `,` $student attr-dict `:` type($state) `,` type($teacher) `,` type($student)
  }];
  let hasVerifier = 1;
}

def Tessel_KLMergeOp : Tessel_Op<"kl_merge", [Pure, SameOperandsAndResultType]> {
  let summary = "Merge two coupled-KL states (associative)";
  let arguments = (ins Tessel_KLState:$lhs, Tessel_KLState:$rhs);
  let results = (outs Tessel_KLState:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Tessel_KLFinalizeOp : Tessel_Op<"kl_finalize", [Pure]> {
  let summary = "KL(P‖Q) = A/lₛ − LSE(s) + LSE(t), and both LSEs, per row";
  let description = [{
    Rows that saw no unmasked score give kl = 0 and both LSEs −∞.
  }];
  let arguments = (ins Tessel_KLState:$state);
  let results = (outs Tessel_Tile:$kl, Tessel_Tile:$lseTeacher,
                      Tessel_Tile:$lseStudent);
  let assemblyFormat = [{
    $state attr-dict `:` type($state) `->` type($kl) `,` type($lseTeacher) `,` type($lseStudent)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Stream-K scheduling
//===----------------------------------------------------------------------===//

def Tessel_StreamKOp : Tessel_Op<"stream_k", [
    RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Units of iterations split evenly over a persistent grid";
  let description = [{
    `units` independent work units of `iters` iterations each. Conceptually
    the units × iters iterations are linearised and split evenly over the
    programs of a persistent grid; a program's range may cover parts of
    several units.

    - `body(%unit, %begin, %end)` computes the partial state of iterations
      [begin, end) of one unit and yields it (one or more values).
    - `merge(%a..., %b...)` combines the states of two adjacent ranges, `a`
      the earlier; it must be associative.
    - `epilogue(%unit, %state...)` consumes the merged state of a whole unit
      once.

    `iters` below 1 counts as one empty iteration: every unit still gets
    `body(unit, 0, 0)` and its epilogue. Program p of G owns the linear
    iterations [⌊p·T/G⌋, ⌊(p+1)·T/G⌋) with T = units · max(iters, 1).

    With `rows`, only the first `rows` rows (dimension 0) of the state's
    values are live: the rest is padding (a decode's query tile is 16 rows
    for one query), whose merged values the epilogue must not use. The
    lowering then moves only the live rows of partial states through memory.
    Every state value must then have rows: a tile of rank 1 or more, or an
    online state, all of the same number of rows. `max_rows` (with `rows`,
    below the state's rows) promises that `rows` never exceeds it: partial
    states then take only that many rows of memory (a decode's one live row
    of 16, say); rows past it are not moved.

    With `cluster` C (2 to 16), the peers of a unit are the C CTAs of one
    thread-block cluster: each cluster takes whole units in turn, CTA r of it
    the r-th of min(C, iters) equal slices of each, and the partial states go
    to the first CTA through its shared memory. That needs no workspace and
    no co-resident grid but C CTAs per unit: for units that leave no SM idle
    at that width (decodes with few, long units).

    The op is executed by the whole grid; `tessel-lower-stream-k` turns it
    into the persistent loop with a partial-state workspace and arrival
    flags (or the cluster's hand-over), or into split-K with a combine
    kernel.
  }];
  let arguments = (ins I32:$units, I32:$iters, Optional<I32>:$rows,
                       OptionalAttr<ConfinedAttr<I64Attr,
                           [IntMinValue<2>, IntMaxValue<16>]>>:$cluster,
                       OptionalAttr<ConfinedAttr<I64Attr,
                           [IntPositive]>>:$max_rows);
  let regions = (region SizedRegion<1>:$body, SizedRegion<1>:$merge,
                        SizedRegion<1>:$epilogue);
  let assemblyFormat = [{
    `units` `(` $units `)` `iters` `(` $iters `)` (`rows` `(` $rows^ `)`)?
    (`max_rows` `(` $max_rows^ `)`)? (`cluster` `(` $cluster^ `)`)?
    attr-dict-with-keyword
    `body` $body `merge` $merge `epilogue` $epilogue
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// Types of the partial state yielded by the body.
    ::mlir::TypeRange getStateTypes();
    /// The first of the state types `state` that `rows` cannot describe:
    /// one without rows (a tile's first dimension, an online state's rows)
    /// or with other rows than the first's; null if there is none.
    static ::mlir::Type findStateWithoutRows(::mlir::TypeRange state);
    /// The rows of a state value (a tile's first dimension, an online
    /// state's rows); 0 for one without rows.
    static int64_t getStateRows(::mlir::Type state);
  }];
}

//===----------------------------------------------------------------------===//
// Shared memory and asynchronous copies (produced by tessel-pipeline)
//===----------------------------------------------------------------------===//

def Tessel_LocalAllocOp : Tessel_Op<"local_alloc", [
    MemoryEffects<[MemAlloc<DefaultResource, 0, FullEffect>]>]> {
  let summary = "A region of the CTA's shared memory for the kernel's lifetime";
  let description = [{
    convert-tessel-to-llvm places each region after the scratch area the
    kernel's ops share, in program order, and counts it in the kernel's
    shared memory.
  }];
  let results = (outs Tessel_MemDesc:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tessel_MemDescIndexOp : Tessel_Op<"memdesc_index", [Pure]> {
  let summary = "Buffer `index` of a memdesc of buffers";
  let arguments = (ins Tessel_MemDesc:$src, I32:$index);
  let results = (outs Tessel_MemDesc:$result);
  let assemblyFormat = "$src `[` $index `]` attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_MemDescTransOp : Tessel_Op<"memdesc_trans", [Pure]> {
  let summary = "The same shared-memory tile, its dimensions swapped";
  let arguments = (ins Tessel_MemDesc:$src);
  let results = (outs Tessel_MemDesc:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_MemDescRowsOp : Tessel_Op<"memdesc_rows", [Pure]> {
  let summary = "Rows [offset, offset + rows) of a shared-memory tile, for a warpgroup dot";
  let description = [{
    A view of consecutive rows of a 2-D tile whose rows are one column block
    (K contiguous, a row no wider than the tensor cores' swizzle): its
    descriptor starts `offset` rows into the tile. Hopper's warpgroup MMA
    swizzles by the address bits, so the view reads the tile's rows at any
    offset (docs/gpu/hopper-isa-notes.md); threads swizzle by the row index
    within the tile, so a view whose offset is not a multiple of 8 is only
    read as a warpgroup dot's A. Several row-shifted operands (MTA's query
    rows shifted by each offset of the convolution) then share one buffer.
  }];
  let arguments = (ins Tessel_MemDesc:$src, I64Attr:$offset);
  let results = (outs Tessel_MemDesc:$result);
  let assemblyFormat = "$src `[` $offset `]` attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tessel_LocalStoreOp : Tessel_Op<"local_store", [
    MemoryEffects<[MemWrite]>]> {
  let summary = "Write a tile into shared memory, for every thread of the CTA to read";
  let description = [{
    After it, every thread sees the whole tile in `dst` (the op ends with a
    CTA barrier, and starts with one so that earlier readers of `dst` are
    done). With `readers_done` a pass has proved those readers done (a CTA
    barrier already lies between them and the store): no barrier before it.
  }];
  let arguments = (ins Tessel_Tile:$src, Tessel_MemDesc:$dst,
                       UnitAttr:$readers_done);
  let assemblyFormat = [{
    $src `,` $dst (`readers_done` $readers_done^)? attr-dict `:` type($src) `,` type($dst)
  }];
  let hasVerifier = 1;
}

def Tessel_LocalLoadOp : Tessel_Op<"local_load", [
    MemoryEffects<[MemRead]>]> {
  let summary = "Read a sub-tile at constant or runtime offsets from shared memory";
  let description = [{
    Element (i, j) of the result is element (i + offsets[0], j + offsets[1])
    of `src`: the result's shape and constant offsets stay inside it; a
    runtime (i32) offset is clamped into [0, source size - result size].
  }];
  let arguments = (ins Tessel_MemDesc:$src, Variadic<I32>:$offsets,
                       DenseI64ArrayAttr:$static_offsets);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = [{
    $src custom<DynamicIndexList>($offsets, $static_offsets) attr-dict `:`
    type($src) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "Type":$result, "Value":$src, "ArrayRef<int64_t>":$offsets), [{
      build($_builder, $_state, result, src, ValueRange(), offsets);
    }]>
  ];
  let hasVerifier = 1;
}

def Tessel_AsyncCopyOp : Tessel_Op<"async_copy", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Start copying the elements a tile of pointers addresses into shared memory";
  let description = [{
    Element (i, j) of `dst` receives the element `ptr[i, j]` points to, or
    0 where `mask` is false (that element is not read). The copy runs in
    the background (cp.async): it belongs to the group the next
    async_commit closes, and `dst` may only be read after an async_wait
    that leaves that group finished.
  }];
  let arguments = (ins Tessel_Tile:$ptr, Tessel_MemDesc:$dst,
                       Optional<Tessel_MaskLike>:$mask);
  let assemblyFormat = [{
    $ptr `,` $dst (`mask` $mask^)? attr-dict `:` type($ptr) `,` type($dst)
      (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

def Tessel_AsyncCommitOp : Tessel_Op<"async_commit", [
    MemoryEffects<[MemWrite]>]> {
  let summary = "Close the group of this thread's async copies started since the last one";
  let assemblyFormat = "attr-dict";
}

def Tessel_AsyncWaitOp : Tessel_Op<"async_wait", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until at most `pending` groups of copies are in flight, then a CTA barrier";
  let description = [{
    After it, every thread of the CTA sees the data of the finished groups
    of every thread, and every thread has passed the shared-memory reads it
    made before it (so their buffers may be copied into again).

    For sm_90a (warpgroup dots) the copies, written through the generic
    proxy, are fenced for readers of the async proxy before the barrier,
    unless `thread_readers` says only threads read them (loaded vectors
    beside tiles that the copy engine moves). That fence also waits for
    this thread's outstanding global reductions (the backwards' dQ).
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntNonNegative]>:$pending,
                       UnitAttr:$thread_readers);
  let assemblyFormat = "$pending attr-dict";
}

def Tessel_MBarrierAllocOp : Tessel_Op<"mbarrier_alloc", [
    MemoryEffects<[MemAlloc<DefaultResource, 0, FullEffect>,
                   MemWrite<DefaultResource, 0, FullEffect>]>]> {
  let summary = "Transaction barriers in shared memory, ready for use";
  let description = [{
    Each barrier is initialised with `arrivals` expected arrivals (by default
    one: the thread that issues a tessel.tma_load), and every thread of the
    CTA and the copy engine see them initialised after this op (it ends with
    a CTA barrier).
  }];
  let arguments = (ins ConfinedAttr<DefaultValuedAttr<I32Attr, "1">,
                                    [IntPositive]>:$arrivals);
  let results = (outs Tessel_MBarriers:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tessel_TMALoadOp : Tessel_Op<"tma_load", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Start copying a block of a tensor descriptor into shared memory (TMA)";
  let description = [{
    One thread of the CTA announces the tile's bytes to barrier `index` of
    `barriers` and starts bulk tensor copies (cp.async.bulk.tensor) of the
    block at `coords` of `desc` (a kernel parameter: a TMA tensor map) into
    `dst`, whose layout is the one the copies' swizzle writes; the barrier's
    phase completes when they have landed (tessel.mbarrier_wait). Elements
    outside the array are written as 0. With an `issue` operand that is
    false nothing happens (the same in every thread).
  }];
  let arguments = (ins Tessel_TensorDesc:$desc, Variadic<I32>:$coords,
                       Tessel_MemDesc:$dst, Tessel_MBarriers:$barriers,
                       I32:$index, Optional<I1>:$issue);
  let assemblyFormat = [{
    $desc `[` $coords `]` `,` $dst `,` $barriers `[` $index `]`
    (`if` $issue^)? attr-dict `:` type($desc) `,` type($dst) `,` type($barriers)
  }];
  let hasVerifier = 1;
}

def Tessel_MBarrierWaitOp : Tessel_Op<"mbarrier_wait", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until barrier `index` completes the phase of parity `phase`";
  let description = [{
    Every thread waits; after it, the data of the copies the phase counted
    is visible to the thread.
  }];
  let arguments = (ins Tessel_MBarriers:$barriers, I32:$index, I32:$phase);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $phase attr-dict `:` type($barriers)
  }];
}

def Tessel_MBarrierArriveOp : Tessel_Op<"mbarrier_arrive", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Arrive once on barrier `index` per executing thread";
  let description = [{
    Each thread that executes it (and whose `arrive` operand, if any, is
    true) arrives on the barrier, releasing its earlier memory accesses to
    the threads that wait for the phase its arrival completes.
  }];
  let arguments = (ins Tessel_MBarriers:$barriers, I32:$index,
                       Optional<I1>:$arrive);
  let assemblyFormat = [{
    $barriers `[` $index `]` (`if` $arrive^)? attr-dict `:` type($barriers)
  }];
}

def Tessel_WarpGroupIdOp : Tessel_Op<"warpgroup_id", [Pure]> {
  let summary = "The executing thread's warpgroup: thread index / 128";
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tessel_NamedBarrierWaitOp : Tessel_Op<"named_barrier_wait", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Arrive on hardware barrier `id` and wait until `threads` have";
  let description = [{
    bar.sync: the barrier completes when `threads` threads (whole warps)
    have arrived, by this op or by tessel.named_barrier_arrive. Barriers 0
    to 2 belong to the CTA and the regions of tessel.warp_specialize.
  }];
  let arguments = (ins I32:$id,
                       ConfinedAttr<I32Attr, [IntPositive]>:$threads);
  let assemblyFormat = "$id `,` $threads attr-dict";
  let hasVerifier = 1;
}

def Tessel_NamedBarrierArriveOp : Tessel_Op<"named_barrier_arrive", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Arrive on hardware barrier `id` of `threads` threads, without waiting";
  let arguments = (ins I32:$id,
                       ConfinedAttr<I32Attr, [IntPositive]>:$threads);
  let assemblyFormat = "$id `,` $threads attr-dict";
  let hasVerifier = 1;
}

def Tessel_WarpSpecializeOp : Tessel_Op<"warp_specialize", [
    RecursiveMemoryEffects, NoTerminator]> {
  let summary = "Split the CTA into consumer warps and a producer warpgroup";
  let description = [{
    The first 32 · `consumer_warps` threads (the kernel's tessel.num_warps)
    run the `consumers` region, where every tile and its layout lives; the next
    32 · `producer_warps` threads run the `producer` region, which holds no
    tiles: it only issues copies (tessel.tma_load) and waits on barriers.
    Its tessel.local_alloc ops name (`tessel.buffer`) the consumers' buffer
    they are: the same shared memory.
    Barriers inside a region (tessel.barrier and those the lowering emits)
    synchronise that region's threads only. With registers given, each
    side first resizes its per-thread register file (setmaxnreg): the
    producer gives up registers the consumers take.
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntPositive]>:$consumer_warps,
                       ConfinedAttr<I32Attr, [IntPositive]>:$producer_warps,
                       OptionalAttr<I32Attr>:$producer_registers,
                       OptionalAttr<I32Attr>:$consumer_registers);
  let regions = (region SizedRegion<1>:$consumers, SizedRegion<1>:$producer);
  let assemblyFormat = [{
    attr-dict `consumers` $consumers `producer` $producer
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// i64 attribute pairing a producer's tessel.local_alloc with the
    /// consumers' one it stands for.
    static constexpr llvm::StringLiteral getBufferAttrName() {
      return llvm::StringLiteral("tessel.buffer");
    }
  }];
}

def Tessel_BarrierOp : Tessel_Op<"barrier", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until every thread of the CTA gets here";
  let description = [{
    Every thread's earlier shared-memory accesses happen before any thread's
    later ones (bar.sync).
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Hopper warpgroup MMA (produced by tessel-warpgroup-mma)
//===----------------------------------------------------------------------===//

def Tessel_WarpGroupDotOp : Tessel_Op<"warpgroup_dot", [
    AllTypesMatch<["acc", "result"]>, MemoryEffects<[MemRead]>]> {
  let summary = "Start result = a·b + acc on the warpgroup tensor cores (sm_90a)";
  let description = [{
    Each warpgroup (four consecutive warps) issues `wgmma.mma_async` for its
    64-row slices of the result, one per 16-wide step of K: B from shared
    memory through a matrix descriptor, A from registers or from shared
    memory through a descriptor too, the f32 accumulator in registers. The
    result's layout is a #tessel.mma with a multiple of four warps along M
    (each owning 16 rows of every 16·warps-row band: exactly wgmma's
    accumulator fragments). With wn warpgroups side by side along N, the
    result's 8-column blocks go to them in turn: each multiplies by every
    wn-th group of 8 rows of a B contiguous along K (`order = [0, 1]`),
    one m64n(N/wn) instruction per step. A is a tile in the matching
    #tessel.dot_operand layout or an M x K memdesc with K contiguous
    (`order = [1, 0]`) or M contiguous (`order = [0, 1]`, read through
    wgmma's transpose bit); B and a memdesc A are in a layout a descriptor
    describes (a swizzle of 128, 64 or 32 bytes; SharedTileLayout). The
    product runs in the background: `result` may only be read through a
    tessel.warpgroup_dot_wait that leaves it finished, or be the `acc` of a
    later warpgroup dot of the same warpgroups (a chain: the MMAs add to the
    same registers in issue order, and the last one's wait finishes them
    all); neither memdesc may be written before then. A product that is only sometimes wanted
    goes in a branch (ptxas serialises every warpgroup MMA of a function
    around one it must predicate).
  }];
  let arguments = (ins Tessel_TileOrMemDesc:$a, Tessel_MemDesc:$b,
                       Tessel_Tile:$acc);
  let results = (outs Tessel_Tile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tessel_WarpGroupDotWaitOp : Tessel_Op<"warpgroup_dot_wait", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until at most `pendings` groups of warpgroup dots are in flight";
  let description = [{
    Returns its inputs, the results of earlier tessel.warpgroup_dot ops,
    once the products of all but the `pendings` most recent groups (a group
    per warpgroup_dot) are done: reading a dot's result goes through this
    op, so no use of the accumulator can move above the wait. With
    `pendings = 0` every product is done and its shared-memory operand may
    be written again.

    `reads` are A operands the dots read from registers: the tensor cores
    may read those registers until the wait, so the wait keeps them live
    and nothing computed before it takes their registers (a loop that
    carries A into a dot issued one iteration late computes the next A
    while the dot runs).
  }];
  let arguments = (ins Variadic<Tessel_Tile>:$inputs,
                       Variadic<Tessel_Tile>:$reads,
                       ConfinedAttr<I32Attr, [IntNonNegative]>:$pendings);
  let results = (outs Variadic<Tessel_Tile>:$results);
  let assemblyFormat = [{
    $inputs (`reads` $reads^ `:` type($reads))? `pendings` `=` $pendings
    attr-dict `:` type($inputs)
  }];
}

//===----------------------------------------------------------------------===//
// Inter-program signalling (produced by tessel-lower-stream-k)
//===----------------------------------------------------------------------===//

def Tessel_FlagSignalOp : Tessel_Op<"flag_signal", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Publish this program's prior global writes, then count one "
                "arrival on a flag";
  let description = [{
    Adds one to the i32 flag with release semantics at device scope: every
    global write the program made before this op is visible to a program
    whose flag_wait sees the arrival. Several programs may signal one flag.
  }];
  let arguments = (ins Tessel_FlagPtr:$flag);
  let assemblyFormat = "$flag attr-dict `:` type($flag)";
}

def Tessel_FlagWaitOp : Tessel_Op<"flag_wait", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until a flag has counted `count` arrivals, then clear "
                "it";
  let description = [{
    `count` (an i32, 1 when absent) arrivals of flag_signal on the flag.
    Acquire semantics at device scope: the writes published by those
    flag_signals are visible after this op. Clearing the flag leaves the
    workspace ready for the next launch. The waiting program must not be
    able to starve the signalling ones: tessel-lower-stream-k only waits on
    programs with higher ids and the runtime keeps persistent grids within
    the co-resident limit.
  }];
  let arguments = (ins Tessel_FlagPtr:$flag, Optional<I32>:$count);
  let assemblyFormat = "$flag (`count` $count^)? attr-dict `:` type($flag)";
}

//===----------------------------------------------------------------------===//
// Thread-block clusters (produced by tessel-lower-stream-k)
//===----------------------------------------------------------------------===//

def Tessel_SharedBufferOp : Tessel_Op<"shared_buffer", [
    MemoryEffects<[MemAlloc<DefaultResource, 0, FullEffect>]>]> {
  let summary = "`elements` elements of the CTA's shared memory for the "
                "kernel's lifetime";
  let description = [{
    A region placed like local_alloc's, reached through a pointer: this
    CTA's, and through cluster_map every other CTA's of its cluster. Its
    contents start undefined.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$elements);
  let results = (outs Tessel_PtrType:$result);
  let assemblyFormat = "`elements` `(` $elements `)` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tessel_ClusterMapOp : Tessel_Op<"cluster_map", [Pure,
    AllTypesMatch<["ptr", "result"]>]> {
  let summary = "The same shared-memory location in CTA `rank` of the cluster";
  let description = [{
    `ptr` points into this CTA's shared memory; the result points at the same
    offset in the shared memory of CTA `rank` (0 <= rank < the kernel's
    tessel.cluster) of this CTA's cluster. That CTA must have started: a
    cluster barrier after its start orders the accesses.
  }];
  let arguments = (ins Tessel_PtrType:$ptr, I32:$rank);
  let results = (outs Tessel_PtrType:$result);
  let assemblyFormat = "$ptr `,` $rank attr-dict `:` type($ptr)";
  let hasVerifier = 1;
}

def Tessel_ClusterArriveOp : Tessel_Op<"cluster_arrive", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Count this CTA's arrival at its cluster's barrier";
  let description = [{
    Every thread of the CTA arrives; with release semantics at cluster scope
    (the memory writes before it are visible to a CTA whose cluster_wait
    completes this phase), or none with `relaxed`. A CTA alternates
    cluster_arrive and cluster_wait; one that exits after an arrival counts
    as arrived from then on.
  }];
  let arguments = (ins UnitAttr:$relaxed);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Tessel_ClusterWaitOp : Tessel_Op<"cluster_wait", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait until every CTA of the cluster has arrived";
  let description = [{
    Completes the barrier phase of this CTA's last cluster_arrive once every
    other CTA of the cluster has arrived in it too (or exited); acquire
    semantics at cluster scope.
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Tessel_YieldOp : Tessel_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["StreamKOp"]>]> {
  let summary = "Yield values from a tessel region";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // TESSEL_OPS
