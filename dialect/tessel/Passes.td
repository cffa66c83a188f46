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
    Runs after tessel-expand-online (states must be tiles or scalars).

    `strategy=persistent` (the default), stream-K: the
    units × iters iterations are linearised; program p of G owns
    [p·T/G, (p+1)·T/G) with T = units·iters. For each unit its range
    touches, a program runs the body on its slice; the program that holds
    the unit's first iteration (its host) waits until the higher programs
    that share the unit have all arrived on its flag, merges their partial
    states in order (loading several before merging them) and runs the
    epilogue; any other program stores its partial state to its workspace
    slot and counts one arrival on its host's flag. Waits only go to higher
    program ids, so a grid no larger than the co-resident CTAs cannot
    deadlock.

    The kernel gains one workspace pointer per state value and a flag
    pointer (i32), in that order, and is marked
    `tessel.launch = "persistent"` with `tessel.workspace` giving the
    elements per program of each of those pointers.

    Under this strategy a stream_k with `cluster` C is lowered for
    thread-block clusters of C CTAs instead: cluster q of the G / C takes
    whole units in turn, its CTA r runs the body on slice r of min(C, iters)
    equal slices, the others store their partial states into CTA 0's shared
    memory (`shared_buffer`, `cluster_map`) and the cluster barrier
    (`cluster_arrive`, `cluster_wait`) orders the hand-over; CTA 0 merges
    them in slice order and runs the epilogue. The kernel gains no
    arguments; it is marked persistent with an empty `tessel.workspace` and
    `tessel.cluster = C`.

    `strategy=split-k`, FlashDecoding's split-K (which ignores `cluster`):
    kernel K becomes two
    kernels, K and `K__combine`, launched one after the other on the same
    grid of G programs with the same arguments and workspace. With
    S = max(1, min(⌊G / units⌋, iters)) chunks per unit, K runs the body on
    work item w = unit·S + chunk (chunk c covers [c·iters/S,
    (c+1)·iters/S)) in program w and stores its partial state to slot w;
    `K__combine` merges each unit's S partials in chunk order and runs the
    epilogue. With S = 1, K runs each whole unit and its epilogue and the
    combine kernel does nothing. No flags: the launch boundary orders the
    two kernels. Both are marked like a persistent kernel (one workspace
    pointer per state value, no flags) and K carries
    `tessel.then = @K__combine`. The kernel's code outside the stream_k runs
    in both kernels, so it must not write memory.
  }];
  let options = [
    Option<"strategy", "strategy", "::mlir::tessel::StreamKStrategy",
           "::mlir::tessel::StreamKStrategy::Persistent",
           "How programs share a unit's iterations",
           "::mlir::tessel::streamKStrategyValues()">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// GPU path: layouts and the conversion to the LLVM dialect
//===----------------------------------------------------------------------===//

def TesselLowerTensorDescs : Pass<"tessel-lower-tensor-descs", "ModuleOp"> {
  let summary = "Make tensor descriptors TMA tensor maps, or pointer arithmetic";
  let description = [{
    Runs before tessel-assign-layouts. On sm_90a (the Hopper path, where
    the copies land in the layouts warpgroup MMA reads), a
    tessel.make_tensor_desc of a grid
    kernel whose base is a pointer argument, whose sizes and strides a
    launch can compute from the kernel's integer arguments, constants and
    grid size, and whose blocks the copy engine can write in the layout the
    tensor cores read (getTMABox; a vector of 32-bit values when a loop reads
    it through expand_dims, for tessel-pipeline to carry in its stages) from
    an innermost coordinate AxisInfo knows to fall on 16 bytes, becomes a
    new kernel argument: a tensor map the runtime encodes at launch,
    described by the argument's `tessel.tensor_map` attribute. Its block
    loads stay (tessel-pipeline turns them into tessel.tma_load). Every other block load becomes a
    masked tessel.load of the pointers it reads, with zeros outside the
    array; within a block, offsets are i32 when the strides are i32 values
    (as the kernels' own pointer arithmetic), i64 otherwise.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TesselAssignLayouts : Pass<"tessel-assign-layouts", "ModuleOp"> {
  let summary = "Give every tile a layout encoding; convert_layout where they meet";
  let description = [{
    Runs after tessel-expand-online and tessel-lower-stream-k. Tiles tied by
    elementwise ops, memory ops and loop/branch values share one encoding.
    A tile shape gets one #tessel.blocked layout per kernel: the kernel's
    `tessel.num_warps`, and per thread a vector along the fastest dimension
    as wide as 16 bytes of the narrowest element that tiles of that shape
    load or store (where the dimension is a multiple of it). The layout
    repeats to cover shapes that are not powers of two; the tail positions
    hold copies of real elements and are masked on writes. Reduction
    results and expand_dims operands take #tessel.slice of their 2-D
    partner, broadcast operands the layout of the result, transposes the
    permuted layout, so those ops move no data; where a value needs two
    different layouts a tessel.convert_layout is inserted. The result of a
    dot with f16 or bf16 operands takes #tessel.mma (the warps on 16-row
    blocks first) and its A operand the matching #tessel.dot_operand. Each
    memory op gets its own copy of the integer, pointer and mask ops that
    compute its operands, so offsets shared between loads and stores do not
    tie their layouts.
  }];
}

def TesselPipeline : Pass<"tessel-pipeline", "ModuleOp"> {
  let summary = "Software-pipeline the loads that feed tensor-core dots through shared memory";
  let description = [{
    Runs after tessel-assign-layouts. In an scf.for, a load whose value is
    only the B operand of tensor-core dots (directly or transposed), whose
    `other` is zero and whose pointers and mask are computed from the
    induction variable and loop invariants alone, becomes `num-stages`
    shared-memory buffers filled by asynchronous copies: the first
    num-stages - 1 iterations' tiles are requested before the loop, and
    each iteration waits for its own tile, requests the tile of the
    iteration num-stages - 1 ahead into the buffer the previous iteration
    read, and feeds the dots from shared memory. Global loads thus overlap
    the loop's arithmetic, and the tiles never pass through registers.
    Iterations past the loop's end copy zeros (their mask is false). A
    kernel's `tessel.num_stages` (`@kernel(num_stages=...)`) overrides the
    option. Not moved: loads of an array the loop writes (told apart by the
    kernel argument each pointer is an offset of).

    A tessel.load_block of a tensor map (tessel-lower-tensor-descs) is
    always moved, by tessel.tma_load copies that thread 0 issues and that
    complete on a transaction barrier per buffer (tessel.mbarrier_wait for
    the phase of the buffer's current use); its tile is read back from the
    buffer when something else than dots uses it; a CTA barrier at the top
    of each iteration (that of async_wait where cp.async copies share the
    loop) orders the previous iteration's reads of a buffer before its
    refill. A block load outside loops is copied once where it is.
  }];
  let options = [
    Option<"numStages", "num-stages", "unsigned", "3",
           "Buffers per pipelined load (2 or more; below 2 the pass does nothing)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TesselStageSlices : Pass<"tessel-stage-slices", "ModuleOp"> {
  let summary = "Write a tile sliced several times to shared memory once";
  let description = [{
    Runs after tessel-assign-layouts. A tile sliced more than once in its
    block or in the loops nested there (the shifted windows of a halo tile,
    as in Multi-Token Attention's key-query convolution: several
    extract_slice ops, or one in a loop or at runtime offsets) is written to
    shared memory once (local_store) and each slice becomes a local_load of
    it, runtime offsets included; otherwise every slice would move the whole
    tile through shared memory on its own.
  }];
}

def TesselWarpGroupMma : Pass<"tessel-warpgroup-mma", "ModuleOp"> {
  let summary = "Run tensor-core dots as Hopper warpgroup MMA (wgmma, sm_90a)";
  let description = [{
    Runs after tessel-assign-layouts, tessel-pipeline and
    tessel-stage-slices, on modules whose `tessel.target` is "sm_90a";
    elsewhere it does nothing. A tessel.dot whose register layouts fit the
    warpgroup MMA (an #tessel.mma accumulator with whole warpgroups along
    M, maybe several side by side along N; see tessel.warpgroup_dot)
    becomes a
    tessel.warpgroup_dot and a tessel.warpgroup_dot_wait with pendings = 0
    that every use of the product reads. B is read where tessel-pipeline
    put it when that memdesc's layout is one a matrix descriptor
    describes; a B held in registers is first written to a shared-memory
    buffer of its own (local_alloc, local_store), contiguous along the
    dimension in which its threads hold runs of elements when that layout
    fits. An A defined outside the loop around its dot (a query block) is
    written once, where it is defined, to a buffer of its own with K
    contiguous, and the warpgroup dots read it there instead of holding it
    in registers through the loop (the tile it is converted from when it is
    a layout conversion, which then goes); unless that buffer would take
    the kernel past the 227 KB of shared memory a Hopper CTA may use.
    Other dots keep mma.sync.
  }];
}

def TesselRotateWarpGroupDots : Pass<"tessel-rotate-warpgroup-dots", "ModuleOp"> {
  let summary = "Issue a loop's accumulating warpgroup dot one iteration late";
  let description = [{
    Runs after tessel-warpgroup-mma, before tessel-order-warpgroup-dots.
    A tessel.warpgroup_dot marked `tessel.rotate` by tessel-pipeline, whose
    waited product is only yielded (an accumulator such as attention's
    O += P·V), is issued in the next iteration instead, right after that
    iteration's first warpgroup dot (S = Q·Kᵀ of the next block), and once
    more after the loop for the last iteration:
      for i: S_i = dot(Q, K_i); O = dot(P_{i-1}, V_{i-1}, O');
             wait S_i; softmax(S_i) -> P_i, O' = wait(O) · α_i
      O = dot(P_last, V_last, O') if the loop ran
    The loop carries A (P; zeros into the first iteration, whose late dot
    adds nothing), the accumulator input and the index of B's buffer (which
    tessel-pipeline made one slot deeper, so the next refill does not
    overwrite it). The tensor cores then compute P·V of one block
    while the threads run the softmax of the next: FlashAttention-3's
    intra-warpgroup overlap, for any loop of this shape.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TesselOrderWarpGroupDots : Pass<"tessel-order-warpgroup-dots", "ModuleOp"> {
  let summary = "Issue warpgroup dots early, in the order their products are needed";
  let description = [{
    Runs after tessel-rotate-warpgroup-dots, before
    tessel-defer-warpgroup-waits. Each tessel.warpgroup_dot moves up its
    block past the ops that only compute, the waits, and the dots whose
    products are needed later than its own (groups complete in issue order),
    taking along the ops that only compute its operands, and stops at any
    other op with memory effects. Then a dot whose product is needed later
    than the next dot's is issued after it, where only ops that compute,
    wait, allocate, synchronise the CTA or store to buffers it does not read
    lie between. In the attention backward dPᵀ = V dOᵀ then runs while the
    threads compute Pᵀ, and dV, dK while they add dQ to memory.
  }];
}

def TesselDeferWarpGroupWaits : Pass<"tessel-defer-warpgroup-waits", "ModuleOp"> {
  let summary = "Wait for each warpgroup dot where its product is first needed";
  let description = [{
    Runs after tessel-order-warpgroup-dots. Each tessel.warpgroup_dot_wait of one
    dot moves down its block to just before the first op that reads the
    product, has regions that hold dots, waits or memory effects, writes
    shared memory (the dot still reads its B
    there) or ends the block, so that the dot overlaps the dots issued and
    the work done after it. Its `pendings` counts the warpgroup dots issued
    between the two (groups complete in issue order). Waits move youngest
    first, so a wait that reaches the wait of a later dot finds it where it
    stays, and joins it. Then the ops after each wait that
    only compute and need nothing it returns (nor any op left after it)
    move above it, so the products have that work's time too.
  }];
}

def TesselDoubleBufferStores : Pass<"tessel-double-buffer-stores", "ModuleOp"> {
  let summary = "Give a loop's per-iteration shared tile two buffers, one barrier fewer";
  let description = [{
    Runs after tessel-defer-warpgroup-waits. A tessel.local_store waits at a
    CTA barrier for the earlier readers of its buffer before it writes. A
    buffer that a loop allocates, stores once and reads in each iteration
    (the backward's dSᵀ, read by the warpgroup dot dQ = dS·K) takes two
    buffers instead, allocated before the loop, iteration i using buffer
    i % 2: the readers of that buffer are iteration i - 2's, done before
    the CTA barrier that ends iteration i - 1's store, so the store needs no
    barrier of its own (`readers_done`). One barrier before the loop orders
    what earlier readers of the memory did before its first iterations.
    Only for buffers a warpgroup dot reads (the tensor cores read them
    behind the threads' back until the wait; buffers only the threads read,
    as mma.sync kernels' staged tiles, were measured slower so), where every
    reader is in the iteration (a warpgroup dot with the wait for its
    product) and the kernel still fits its shared memory.
  }];
}

def TesselWarpSpecialize : Pass<"tessel-warp-specialize", "ModuleOp"> {
  let summary = "Issue a kernel's tensor-map copies from a producer warpgroup";
  let description = [{
    Runs last among the tile passes, on sm_90a kernels marked
    `tessel.warp_specialize` (the DSL's `@kernel(warp_specialize=True)`);
    elsewhere it does nothing. The kernel body becomes the consumer region
    of a tessel.warp_specialize with one producer warpgroup more. The
    producer runs the loops of the body that issue tessel.tma_load, kept
    down to the copies and the scalars they need; the consumers run the rest
    and, where a copy was, arrive on an "empty" barrier of its slot. The
    producer waits on that barrier before the copy: fill d of a buffer with
    N slots waits for phase d / N of barrier d % N, which completes when
    every consumer thread has reached the point where the copy stood in the
    original program. So each copy is ordered after the same consumer reads
    as before, without a CTA barrier: the consumer warpgroups no longer run
    in lockstep, and the copies' issue no longer costs them time. A barrier
    that only guarded a refill (tessel-pipeline's, at the top of a loop)
    goes. The producer keeps 24 registers a thread and gives the rest to the
    consumers (setmaxnreg) when that gives them more than an even share;
    the kernel then asks for more than half of an SM's shared memory, so
    that it runs alone on its SM (an increase waits for free registers: two
    CTAs could wait on each other).
    The mbarriers move to the top of the kernel (initialised once, by every
    thread, before the split).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TesselPingPong : Pass<"tessel-ping-pong", "ModuleOp"> {
  let summary = "Let a warp-specialised kernel's consumer warpgroups take turns issuing warpgroup dots";
  let description = [{
    Runs after tessel-warp-specialize, on sm_90a kernels marked
    `tessel.ping_pong` (the DSL's `@kernel(ping_pong=True)`), which must be
    warp-specialised with at least two consumer warpgroups. In each loop of
    the consumer region that issues tessel.warpgroup_dot ops, warpgroup w
    waits on named barrier 3 + w before the iteration's first dot and
    arrives on that of warpgroup (w + 1) % n after its last: one
    warpgroup's dots are issued while the others compute, in a ring that
    warpgroup 0 starts (FlashAttention-3's ping-pong of softmax against
    GEMMs, for any such loop).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TesselPrefetchScalarLoads : Pass<"tessel-prefetch-scalar-loads", "ModuleOp"> {
  let summary = "Issue a loop's scalar loads one iteration ahead";
  let description = [{
    In an scf.for, a scalar tessel.load of an array the kernel never writes,
    whose pointer, mask and `other` are computed from the induction variable,
    loop invariants and pure ops of the body (and depend on the induction
    variable), is issued one iteration ahead: the first iteration's before
    the loop, masked off when the loop may run no iteration, and each
    iteration's at the top of the one before it (the last iteration loads
    its own again, so that the loads in the loop need no mask and keep their
    addresses' constant offsets); its value goes round the loop. A
    per-iteration scalar (a convolution's weight) then arrives while the
    previous iteration computes instead of stalling the arithmetic that
    uses it.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def TesselTestAxisInfo : Pass<"tessel-test-axis-info", "ModuleOp"> {
  let summary = "Report the AxisInfo analysis (for tests)";
  let description = [{
    Emits a remark with the contiguity, divisibility and constancy of every
    result of each op that carries the unit attribute `test.axis`, as
    convert-tessel-to-llvm sees them before vectorising memory accesses.
  }];
}

def ConvertTesselToLLVM : Pass<"convert-tessel-to-llvm", "ModuleOp"> {
  let summary = "Lower tessel kernels with layouts to the LLVM and NVVM dialects";
  let description = [{
    Every tile becomes the scalars its layout gives the thread (a 1:N type
    conversion); kernels become llvm.func with nvvm.kernel and
    nvvm.maxntid = 32 · num_warps and one parameter per argument (pointers
    are bare global pointers). Data that must cross threads goes through one
    dynamic shared-memory buffer, each use fenced by CTA barriers. A
    persistent kernel's workspace arguments are packed behind one trailing
    pointer, laid out region after region, each region `num_ctas` slots of
    16-byte-aligned size (see docs/bundle.md).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

#endif // TESSEL_PASSES
