"""The ops' tile candidates, and op tuning: with TESSEL_TUNE_OPS=1 in the environment the ready
ops pick the tiles of their kernels by timing (tessel.autotune) instead of taking the fixed
tables (common.GPU_TUNED, GPU_TUNED_SM90A). That is meant for the GPU; on the interpreter it
works the same (the tests use it there) but times the CPU. Inside a CUDA graph capture the
tables are used (tuning synchronises the device).

A kernel with candidates here is tuned per call shape (the key its op names: the inputs' shapes
and dtypes, causality) among the table's entry and these candidates, within TUNE_BUDGET_S
seconds, once per device and compiler: the choice is kept on disk (<cache_dir>/autotune/), so a
warm cache never tunes again. The first call of a new shape pays for compiling and timing every
candidate. scripts/gpu/tune.py times the same candidates offline to set the tables.

Candidates are (BLOCK_M, BLOCK_N, NUM_WARPS, NUM_STAGES[, WARP_SPECIALIZE[, PING_PONG]]) per
(kernel, head dim). On sm_90a the warpgroup MMA takes the dots whose BLOCK_M is a multiple of
16 * NUM_WARPS; WARP_SPECIALIZE=True moves the tensor-map copies to a producer warpgroup and
PING_PONG=True has its consumer warpgroups take turns on the tensor cores (other targets ignore
both).
"""

from ..compiler import env_flag

CANDIDATES = {
    ("attention_fwd", 64): [(64, 32, 4, 3), (64, 64, 4, 3), (128, 64, 8, 3), (128, 64, 4, 3),
                            (128, 128, 8, 2), (128, 32, 8, 3), (128, 128, 4, 2),
                            (128, 128, 8, 3), (128, 64, 8, 3, True), (128, 128, 8, 2, True),
                            (128, 128, 8, 2, True, True), (256, 64, 16, 3, True)],
    ("attention_fwd", 128): [(64, 32, 4, 3), (64, 64, 4, 2), (64, 64, 4, 3), (128, 64, 8, 2),
                             (128, 64, 8, 3), (128, 32, 8, 3), (128, 32, 8, 4),
                             (128, 128, 8, 2), (64, 128, 4, 2), (128, 128, 8, 2, True),
                             (128, 64, 8, 2, True), (128, 64, 8, 3, True),
                             (128, 128, 8, 2, True, True), (128, 64, 8, 3, True, True)],
    ("lean_attention", 128): [(16, 64, 4, 3), (16, 32, 4, 4), (16, 64, 4, 4), (16, 128, 4, 2),
                              (16, 128, 4, 3), (16, 64, 8, 3), (16, 128, 8, 3)],
    ("attention_bwd", 64): [(32, 32, 8, 3), (64, 64, 4, 3), (64, 64, 8, 3), (32, 64, 4, 3),
                            (64, 128, 8, 2), (64, 128, 8, 3), (128, 64, 8, 3)],
    ("attention_bwd", 128): [(32, 32, 8, 3), (64, 64, 8, 2), (64, 64, 8, 3), (32, 64, 4, 3),
                             (64, 32, 8, 3), (128, 64, 8, 2), (64, 64, 4, 2), (64, 128, 4, 2),
                             (64, 128, 8, 2), (128, 128, 8, 2)],
    ("attention_kl_fwd", 128): [(32, 32, 8, 3), (64, 64, 8, 2), (64, 64, 8, 3), (128, 64, 8, 2),
                                (64, 32, 4, 3), (64, 64, 4, 2), (128, 128, 8, 2),
                                (64, 128, 4, 2), (128, 64, 8, 2, True), (128, 64, 8, 2, True, True),
                                (128, 64, 8, 3, True, True), (256, 64, 16, 2, True)],
    ("attention_kl_bwd", 128): [(32, 32, 8, 3), (64, 64, 8, 2), (32, 64, 8, 3), (64, 32, 8, 3),
                                (64, 64, 4, 2), (128, 64, 8, 2), (64, 128, 4, 2),
                                (64, 128, 8, 2), (128, 128, 8, 2), (64, 128, 8, 2, True)],
    ("mta_fwd", 64): [(32, 32, 8, 3), (64, 64, 8, 3), (64, 32, 8, 3), (32, 64, 8, 3),
                      (64, 64, 4, 2), (32, 32, 4, 3), (64, 32, 4, 3), (64, 64, 4, 3),
                      (128, 64, 8, 2)],
    ("mta_fwd_conv_keys", 64): [(64, 32, 4, 3), (64, 32, 4, 2, True), (128, 32, 8, 2),
                                (128, 32, 8, 2, True), (128, 32, 8, 2, True, True)],
    ("mta_bwd", 64): [(16, 32, 8, 3), (32, 32, 8, 3), (16, 64, 8, 3), (32, 64, 8, 2),
                      (32, 32, 4, 3), (16, 32, 4, 3), (64, 32, 4, 3), (64, 64, 4, 2)],
}

# Seconds of timing per tuned shape (compiling comes first and is not counted).
TUNE_BUDGET_S = 20.0
# A candidate replaces the table's entry when it measures this much faster (timing noise is a
# few percent).
TUNE_MARGIN = 0.03


def tile_constants(candidate):
    """A candidate tuple as the kernel's constexprs."""
    names = ("BLOCK_M", "BLOCK_N", "NUM_WARPS", "NUM_STAGES", "WARP_SPECIALIZE", "PING_PONG")
    return dict(zip(names, candidate))


def tune_ops():
    """Whether the ops tune their tiles (TESSEL_TUNE_OPS=1, read whenever an op launches through
    its checked path; a launch plan recorded for a call shape replays the tiles it recorded)."""
    return env_flag("TESSEL_TUNE_OPS")


def candidates(kernel, d):
    """The candidates of `kernel` at head dim `d` as constexpr dicts ([] if none)."""
    return [tile_constants(c) for c in CANDIDATES.get((kernel, d), ())]
