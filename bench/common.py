"""Pure parts shared by the workloads, the worker and the reports: correctness verdicts, rates,
speedups, and the conventions every results file states. No torch here.
"""

import math
import re

# Relative error (max |out - ref| / max |ref| against a float32 reference) allowed per element
# type; gradients get GRAD_TOL_FACTOR times more (they sum longer chains of rounded terms).
TOL = {"bf16": 2e-2, "f16": 1e-2}
GRAD_TOL_FACTOR = 2.5
# An implementation also passes within this factor of the best peer's error: where the peers
# themselves are that far from the float32 reference, the problem is the input, not the kernel.
PEER_FACTOR = 2.0

CONVENTIONS = """\
- Time: median of the timed repetitions (CUDA events on the current stream around each call,
  the L2 cache flushed by a 256 MiB write before every call, after one untimed call and one
  estimating call). Inputs are fresh standard-normal tensors per configuration (seeded by the
  run's seed and the configuration). `wall` in the JSON is the wall-clock time per call of three
  back-to-back calls; a note flags rows where it is much larger than the event time (host-bound
  calls, or work launched outside the current stream), and rows whose fastest call took under
  3/4 of the median (calls that vary: one bound by its host path, the GPU waiting for it).
- Speedup = peer time / Tessel time: above 1 Tessel is faster.
- Attention FLOPs (prefill, forward): 4·B·H·Nq·Nk·D; causal counts half. Forward + backward
  (prefill-bwd): 3.5× that (FlashAttention's count: the backward is 2.5 forwards).
- Decode: GB/s of K and V read once: 2·B·HKV·Nk·D·(bytes per element).
- StreamKL FLOPs: forward 2·B·H·N²·(DT + DS) (teacher and student scores); forward + backward adds
  4·B·H·N²·DS (the student's dQ and dK); causal counts half. Memory: peak allocated during one
  call beyond what was allocated before it (outputs and gradients included).
- MTA FLOPs: forward (4·B·H·N²·D + 2·B·H·N²·cq·ck) / 2 (causal half; the convolution counted
  over the causal half too); forward + backward 3.5× the attention part + 3× the convolution part.
  MTA decode (the newest position's row, from the cq newest queries): 2·B·H·N·(D·(cq + 1) + cq·ck)
  (their scores, one row of convolution, P·V); the notes give the K/V read rate in GB/s.
- Launch: wall-clock time per call of 300 back-to-back eager calls with one synchronize at the
  end (median of 5 rounds, after 20 warm-up calls); graph replay: GPU time per replay of a CUDA
  graph holding one call (CUDA events around 300 back-to-back replays).
- Correctness, before timing, on the same inputs: error = max |out - ref| / max |ref| against a
  float32 reference (prefill: 128 query rows, the last 64 included; decode: every row; StreamKL:
  per-row KL and the student's gradients, chunked float32; MTA and its decode: the PyTorch
  reference run in float32). An implementation passes when its error is at most max(tol, 2 × the best peer's
  error), tol = 2e-2 for bf16 and 1e-2 for f16 (2.5× for gradients). A failed check marks the
  implementation FAIL; its time is still shown, flagged.
"""


def tolerance(dtype_name, grads=False):
    return TOL[dtype_name] * (GRAD_TOL_FACTOR if grads else 1.0)


def is_tessel(impl):
    return impl.startswith("tessel")


def judge(results, tol):
    """Turns each timed result ({'status': 'timed', 'err': e, ...}) into 'ok' or 'FAIL' against
    max(tol, PEER_FACTOR × the best peer's error); records that limit as 'limit'."""
    peer_errs = [r["err"] for impl, r in results.items()
                 if not is_tessel(impl) and math.isfinite(r.get("err", math.inf))]
    limit = max(tol, PEER_FACTOR * min(peer_errs)) if peer_errs else tol
    for r in results.values():
        if "err" in r:
            r["limit"] = limit
            if r.get("status") == "timed":
                r["status"] = "ok" if r["err"] <= limit else "FAIL"
    return results


def short_error(exc, limit=400):
    """The exception's type, the first line of its message and its notes (PEP 678: the warnings
    that explain it), on one line for a table cell and the JSON."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    notes = [" ".join(n.split()) for n in getattr(exc, "__notes__", ())]
    text = "; ".join([text] + notes)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def rate(work, ms, unit):
    """TFLOP/s (work in FLOPs) or GB/s (work in bytes) of `work` done in `ms` milliseconds."""
    if not ms or ms <= 0:
        return None
    return work / (ms * 1e-3) / (1e12 if unit == "TFLOP/s" else 1e9)


def speedup(results, tessel, peer):
    """Peer time / Tessel time, or None where either has no time."""
    t, p = results.get(tessel, {}).get("ms"), results.get(peer, {}).get("ms")
    if not t or not p:
        return None
    return p / t


def slug(device_name):
    """File-name form of a device name: 'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3'."""
    words = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
    words = re.sub(r"^nvidia-", "", words)
    return words or "unknown-device"
