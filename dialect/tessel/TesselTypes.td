//===- TesselTypes.td - tessel types -----------------------*- tablegen -*-===//

#ifndef TESSEL_TYPES
#define TESSEL_TYPES

include "tessel/TesselDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class Tessel_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Tessel_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Tessel_PtrType : Tessel_Type<"Ptr", "ptr"> {
  let summary = "Pointer to global memory, or to a CTA's shared memory";
  let description = [{
    `!tessel.ptr<f16>` points at elements of a scalar type in global memory.
    `!tessel.ptr<f32, shared>` points into the shared memory of a CTA of this
    thread-block cluster (a `shared_buffer`, its own or one `cluster_map`
    reached): loads and stores through it are generic accesses; atomics,
    flags and tensor descriptors take global pointers only.
  }];
  let parameters = (ins "Type":$pointeeType,
                        DefaultValuedParameter<"bool", "false">:$shared);
  let builders = [
    TypeBuilder<(ins "Type":$pointeeType), [{
      return $_get($_ctxt, pointeeType, false);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Tessel_TileType : Tessel_Type<"Tile", "tile", [ShapedTypeInterface]> {
  let summary = "Statically shaped tile of scalars or pointers";
  let description = [{
    `!tessel.tile<64x128xf16>` is a value of 64×128 elements held collectively
    by the threads of one CTA. The optional encoding attribute
    (`!tessel.tile<64x128xf16, #tessel.blocked<...>>`) says how the elements
    are distributed; the front end leaves it empty and
    `tessel-assign-layouts` fills it in.
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "Type":$elementType,
    OptionalParameter<"Attribute">:$encoding
  );
  let builders = [
    TypeBuilderWithInferredContext<(ins "ArrayRef<int64_t>":$shape,
                                        "Type":$elementType,
                                        CArg<"Attribute", "{}">:$encoding), [{
      return $_get(elementType.getContext(), shape, elementType, encoding);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let skipDefaultBuilders = 1;
  let extraClassDeclaration = [{
    using ShapedType::Trait<TileType>::clone;
    using ShapedType::Trait<TileType>::getRank;
    using ShapedType::Trait<TileType>::getNumElements;
    bool hasRank() const { return true; }
    TileType cloneWith(std::optional<ArrayRef<int64_t>> shape,
                       Type elementType) const;
    /// The same shape and encoding with another element type.
    TileType withElementType(Type elementType) const;
  }];
}

def Tessel_MemDescType : Tessel_Type<"MemDesc", "memdesc"> {
  let summary = "A tile's place in shared memory";
  let description = [{
    `!tessel.memdesc<64x128xf16, order = [1, 0]>` describes a region of the
    CTA's shared memory holding a 2-D tile whose `order[0]` dimension is
    contiguous. A tile of 16-bit elements is stored as column blocks of at
    most 128 bytes (a 64x128xf16 tile: two blocks of 64 rows x 64 columns),
    each row of a block made of 16-byte chunks XOR-swizzled by the row index
    (SharedTileLayout): eight rows read at one chunk fall in different
    banks, and for blocks of 128, 64 or 32 bytes the arrangement is the
    swizzle Hopper's warpgroup MMA reads through a matrix descriptor. A tile
    of 32-bit elements keeps plain rows, whole 16-byte chunks apart unless
    `pitch` (in elements, even: rows stay 8-byte aligned) says otherwise:
    `!tessel.memdesc<37x42xf32, order = [1, 0], pitch = 56>`. A
    leading dimension counts buffers (`3x64x128xf16`: three tiles, for a
    pipeline's stages). Unlike a tile, a memdesc is a place: async copies
    write it, dots read it.

    `columns = #tessel.mma<..., columnRun = 4>` (the B operand of a
    warpgroup dot into that accumulator layout, contiguous along K: order =
    [0, 1]) keeps its columns in the order the dot reads them: row r of the
    K-contiguous storage holds the column that the accumulator layout puts
    where wgmma writes column r's products (getWarpGroupColumnRows).
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "Type":$elementType,
    ArrayRefParameter<"unsigned">:$order,
    "int64_t":$pitch,
    "Attribute":$columns
  );
  let builders = [
    TypeBuilder<(ins "ArrayRef<int64_t>":$shape, "Type":$elementType,
                     "ArrayRef<unsigned>":$order), [{
      return $_get($_ctxt, shape, elementType, order, /*pitch=*/0,
                   /*columns=*/Attribute());
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The same place with another shape (buffers of the tile, one buffer of
    /// them, the tile transposed), rows as far apart.
    MemDescType withShape(ArrayRef<int64_t> shape,
                          ArrayRef<unsigned> order) const {
      return get(getContext(), shape, getElementType(), order, getPitch(),
                 getColumns());
    }
    /// The shape of one buffer (the last two dimensions).
    ArrayRef<int64_t> getTileShape() const { return getShape().take_back(2); }
    /// The dimension of the tile whose elements are contiguous.
    unsigned getContiguousDim() const { return getOrder()[0]; }
    /// Where each buffer's elements sit.
    SharedTileLayout getSharedLayout() const;
  }];
}

def Tessel_TensorDescType : Tessel_Type<"TensorDesc", "tensor_desc"> {
  let summary = "A strided array in global memory, read in blocks of one shape";
  let description = [{
    `!tessel.tensor_desc<1x64x128xbf16>` describes an array of bf16 in
    global memory (a base pointer, a size and a stride per dimension, the
    innermost dimension contiguous) that tessel.load_block reads in blocks
    of 1x64x128 elements. A block's unit dimensions are dropped from the
    tile it loads (at most two remain: `getTileShape`). On targets with the
    tensor memory accelerator a descriptor whose base, sizes and strides a
    launch can compute becomes a TMA tensor map, a kernel parameter the
    runtime encodes.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$blockShape,
                        "Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getRank() const { return getBlockShape().size(); }
    /// The shape of the tile a block load yields: the block's dimensions
    /// that are not 1 (one element when all are).
    SmallVector<int64_t> getTileShape() const;
    /// For each dimension of getTileShape(), the block dimension it is.
    SmallVector<unsigned> getTileDims() const;
  }];
}

def Tessel_MBarriersType : Tessel_Type<"MBarriers", "mbarriers"> {
  let summary = "Transaction barriers (mbarrier) in shared memory";
  let description = [{
    `!tessel.mbarriers<3>`: three barriers, one per buffer of a pipeline,
    each completing a phase when its expected bytes of asynchronous copies
    have landed and its arrivals are in.
  }];
  let parameters = (ins "int64_t":$count);
  let assemblyFormat = "`<` $count `>`";
  let genVerifyDecl = 1;
}

def Tessel_SoftmaxStateType : Tessel_Type<"SoftmaxState", "softmax_state"> {
  let summary = "State of an online softmax over `rows` rows";
  let description = [{
    The running row maximum m (rows), running sum l = Σ exp(s − m) (rows)
    and the f32 accumulator Σ exp(s − m)·v (rows × cols) of an online softmax
    followed by a product with V. Written `!tessel.softmax_state<64x128>`.
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$cols);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Tessel_KLStateType : Tessel_Type<"KLState", "kl_state"> {
  let summary = "State of the coupled online KL reduction over `rows` rows";
  let description = [{
    Per row: (mₛ, lₛ, mₜ, lₜ, A) with lₛ = Σ exp(sⱼ − mₛ), lₜ = Σ exp(tⱼ − mₜ)
    and A = Σ exp(sⱼ − mₛ)(sⱼ − tⱼ), all f32. Written `!tessel.kl_state<64>`.
  }];
  let parameters = (ins "int64_t":$rows);
  let assemblyFormat = "`<` $rows `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Tessel_Float : AnyTypeOf<[F16, BF16, F32]>;
def Tessel_Int : AnyTypeOf<[I1, I32, I64]>;
def Tessel_Scalar : AnyTypeOf<[Tessel_Float, Tessel_Int]>;
// Constraints keep the generic C++ type so that the printed IR always spells
// out `!tessel.tile<...>` (ODS elides the dialect prefix otherwise).
def Tessel_Tile : Type<CPred<"::llvm::isa<::mlir::tessel::TileType>($_self)">,
                       "tile">;
def Tessel_PtrLike : Type<CPred<"::mlir::tessel::isPtrLike($_self)">,
                          "pointer or tile of pointers">;
def Tessel_IntTile : Type<And<[Tessel_Tile.predicate,
    CPred<"::llvm::cast<::mlir::tessel::TileType>($_self).getElementType().isSignlessInteger()">]>,
    "tile of integers">;
def Tessel_IntLike : AnyTypeOf<[Tessel_Int, Tessel_IntTile]>;
def Tessel_MaskLike : Type<CPred<"::mlir::tessel::isMaskLike($_self)">,
                           "i1 or tile of i1">;
def Tessel_FlagPtr : Type<
    CPred<"$_self == ::mlir::tessel::PtrType::get($_self.getContext(), "
          "::mlir::IntegerType::get($_self.getContext(), 32))">,
    "pointer to i32">;
def Tessel_MemDesc : Type<CPred<"::llvm::isa<::mlir::tessel::MemDescType>($_self)">,
                          "shared-memory descriptor">;
def Tessel_TensorDesc : Type<
    CPred<"::llvm::isa<::mlir::tessel::TensorDescType>($_self)">,
    "tensor descriptor">;
def Tessel_MBarriers : Type<
    CPred<"::llvm::isa<::mlir::tessel::MBarriersType>($_self)">,
    "mbarriers">;
def Tessel_TileOrMemDesc : AnyTypeOf<[Tessel_Tile, Tessel_MemDesc]>;
def Tessel_SoftmaxState : Type<
    CPred<"::llvm::isa<::mlir::tessel::SoftmaxStateType>($_self)">,
    "online-softmax state">;
def Tessel_KLState : Type<
    CPred<"::llvm::isa<::mlir::tessel::KLStateType>($_self)">,
    "coupled-KL state">;

#endif // TESSEL_TYPES
