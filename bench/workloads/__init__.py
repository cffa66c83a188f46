"""The workloads, one module each, all with the same surface:

    NAME, TITLE          key (--workloads) and table title
    UNIT, CEILING        rate unit ("TFLOP/s" or "GB/s") and the ceiling it is read against
                         ("matmul_tflops" or "copy_gbps", measured in the same run); None for
                         a workload of times only (launch)
    IMPLS                ((impl, column header), ...): Tessel's first ("tessel..."), then the peers
    RATIOS               ((tessel impl, peer impl, header), ...): speedup columns
    COLUMNS              ((config key, header), ...): the columns that name a configuration
    configs(quick)       the configurations in table order: dicts with a unique "id"
    work(cfg)            FLOPs or bytes (the rate's numerator; also orders the run, cheapest first)
    run(ctx, cfg)        on the GPU: {"results": {impl: {...}}, "note": str}

Everything but run() is pure Python: torch is imported inside run(), so the configuration lists
and formulas are tested on machines without it.
"""

from . import decode, kl, launch, mta, paged, prefill, prefill_bwd

WORKLOADS = {m.NAME: m for m in (prefill, prefill_bwd, decode, paged, kl, mta, launch)}
