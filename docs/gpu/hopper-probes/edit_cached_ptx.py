#!/usr/bin/env python3
"""Timing probe: rewrites the PTX of the GPU kernels in a Tessel kernel cache ($TESSEL_CACHE_DIR
entries `<kernel>-<key>.bundle`), so that the next run of the same kernels times the edited code.
The edits remove synchronisation the kernel needs: results are wrong, only the times mean
something (an upper bound on what a correct change could save).

    edit_cached_ptx.py CACHE_DIR KERNEL EDIT[,EDIT...]

EDIT:
  loop-top-barrier   the barrier (the CTA's, or a warp-specialised kernel's consumers')
                     after each `cp.async.wait_group N;` (the pipeline's barrier at
                     the top of a loop)
  tma-refill-barrier each `bar.sync 0;` that the next bulk tensor copy's
                     `mbarrier.arrive.expect_tx` follows within 30 lines with no
                     other `bar.sync` between (a barrier that only orders refills)
  loop-end-drain     each `wgmma.wait_group.sync.aligned 0;` followed only by loop control and
                     a branch (the wait for a loop's accumulators before its back edge)
"""
import glob
import json
import os
import re
import sys

from tessel import cache


def drop_loop_top_barrier(ptx):
    """The barrier right after each wait for cp.async groups (tessel-pipeline's barrier at the
    head of its loop; the same pair on a loop's exit path goes too)."""
    return re.subn(r"(\n\tcp\.async\.wait_group \t\d+;)\n\tbar\.sync \t(0|1, \d+);", r"\1", ptx)


def drop_loop_end_drain(ptx):
    """Each `wgmma.wait_group.sync.aligned 0;` that only loop control separates from a branch."""
    return re.subn(r"\n\twgmma\.wait_group\.sync\.aligned 0;(\n\t// end inline asm"
                   r"(\n\t(add|setp|mov|selp|cvt|and|shl)[^\n]*)*\n\t@%p\d+ bra)", r"\1", ptx)


def drop_tma_refill_barrier(ptx):
    """Each CTA barrier right before the refill of a bulk tensor copy's buffer."""
    lines = ptx.split("\n")
    drop = set()
    for i, line in enumerate(lines):
        if line.strip() != "bar.sync \t0;":
            continue
        for later in lines[i + 1:i + 31]:
            if "bar.sync" in later:
                break
            if "mbarrier.arrive.expect_tx" in later:
                drop.add(i)
                break
    return "\n".join(l for i, l in enumerate(lines) if i not in drop), len(drop)


EDITS = {"loop-top-barrier": drop_loop_top_barrier, "loop-end-drain": drop_loop_end_drain,
         "tma-refill-barrier": drop_tma_refill_barrier}


def main():
    if len(sys.argv) != 4 or any(e not in EDITS for e in sys.argv[3].split(",")):
        sys.exit(f"usage: edit_cached_ptx.py CACHE_DIR KERNEL EDIT[,EDIT...] (EDIT: "
                 f"{', '.join(EDITS)})")
    directory, kernel, edits = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    for path in sorted(glob.glob(os.path.join(directory, f"{kernel}-*.bundle"))):
        body = cache.load(path)
        if body is None:
            continue
        bundle = json.loads(body)
        ptx = bundle["ptx"]
        report = []
        for e in edits:
            ptx, n = EDITS[e](ptx)
            report.append(f"{e} x{n}")
        bundle["ptx"] = ptx
        cache.store(path, json.dumps(bundle))
        print(f"{os.path.basename(path)}: {', '.join(report)}")


if __name__ == "__main__":
    main()
