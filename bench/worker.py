"""One workload (or the ceilings) in a process of its own, started by bench/run.py:

    python3 -m bench.worker --workload decode --seconds 120 --events FILE [--skip ID,...]
                            [--quick] [--dtype bf16] [--seed 0]

A kernel fault poisons the CUDA context of its process, and a hung kernel never returns; a
process per workload lets the run go on after either. The worker appends JSON records to the
events file as it goes (so a killed worker loses nothing it finished):
    {"event": "meta", device, versions, tessel}      first
    {"event": "ceilings", ...}                        the ceilings worker's result
    {"event": "start", "id"}                          before each configuration it runs
    {"event": "row", "id", "status", "note", "results"}
    {"event": "fatal", "error"}                       no GPU, no torch
Exit codes: 0 done, 2 fatal, 3 the CUDA context was lost, 4 a configuration hung (or was still
running at the workload's deadline), 5 memory of a failed call was not released (a fresh process
measures the rest on a clean allocator, starting from the timings so far: --history).
"""

import argparse
import json
import os
import sys
import threading
import time

from . import budget
from .common import short_error
from .workloads import WORKLOADS

EXIT_FATAL, EXIT_CONTEXT_LOST, EXIT_HUNG, EXIT_LEAK = 2, 3, 4, 5
# Memory left allocated between configurations beyond which the worker hands over to a fresh one.
LEAK_LIMIT_BYTES = 1 << 30


class Events:
    """Appends one JSON record per line, flushed, from any thread."""

    def __init__(self, path):
        self._file = open(path, "a")
        self._lock = threading.Lock()

    def emit(self, event, **fields):
        with self._lock:
            self._file.write(json.dumps({"event": event, **fields}) + "\n")
            self._file.flush()

    def row(self, cfg_id, status, note="", results=None):
        self.emit("row", id=cfg_id, status=status, note=note, results=results or {})


class Watchdog(threading.Thread):
    """Ends the process when one configuration runs past its limit (a kernel that never
    returns). CUDA synchronisation releases the GIL, so this thread still runs then; if it
    cannot, bench/run.py kills the process at the workload's deadline instead."""

    def __init__(self, events):
        super().__init__(daemon=True)
        self._events = events
        self._lock = threading.Lock()
        self._armed = None

    def arm(self, cfg_id, seconds, out_of_time=False):
        """out_of_time: the limit is the workload's deadline (budget.hang_limit), so a
        configuration still running then is reported unfinished, not hung."""
        with self._lock:
            self._armed = (cfg_id, time.monotonic() + seconds, seconds, out_of_time)

    def disarm(self):
        with self._lock:
            self._armed = None

    def expired(self, now):
        """(configuration id, status, note) once the armed configuration ran past its limit.
        The caller holds the lock."""
        armed = self._armed
        if not armed or now <= armed[1]:
            return None
        cfg_id, _, seconds, out_of_time = armed
        if out_of_time:
            return cfg_id, "skipped", (f"not finished when the time budget ran out, after "
                                       f"{seconds:.0f} s (slow or hung)")
        return cfg_id, "crashed", f"hung: no result after {seconds:.0f} s"

    def run(self):
        while True:
            time.sleep(0.5)
            # Under the lock to the end: a configuration that finishes now cannot disarm and
            # record its row in between.
            with self._lock:
                expired = self.expired(time.monotonic())
                if expired:
                    self._events.row(*expired)
                    print(f"  {expired[0]}: {expired[2]}, ending the worker", flush=True)
                    os._exit(EXIT_HUNG)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", required=True, choices=["ceilings", *WORKLOADS])
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--events", required=True)
    p.add_argument("--skip", default="")
    p.add_argument("--history", default="{}",
                   help="JSON {implementation: [seconds per call, work]} of an earlier worker")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def import_tessel():
    """(module, None) or (None, why not)."""
    try:
        import tessel
    except Exception as exc:  # reported in every Tessel cell; the peers still run
        return None, short_error(exc)
    has_gpu = getattr(tessel, "has_gpu", None)
    if has_gpu is not None and not has_gpu():
        return None, "tessel.has_gpu() is False"
    return tessel, None


def summary(cfg_id, row):
    parts = []
    for impl, res in row["results"].items():
        if res.get("ms") is not None:
            parts.append(f"{impl} {res['ms']:.4g} ms {res['status']}")
        else:
            parts.append(f"{impl} {res.get('status')}")
    return f"  {cfg_id}: " + (" | ".join(parts) if parts else row.get("note", ""))


def had_oom(row):
    """Whether the configuration or one of its implementations ran out of memory."""
    return row["status"] == "OOM" or any(
        isinstance(r, dict) and r.get("status") == "OOM" for r in row["results"].values())


def run_workload(module, ctx, events, skip, quick, memory_bytes):
    """Runs the configurations not in `skip`, cheapest first; returns an exit code."""
    from . import gpu

    todo = sorted((c for c in module.configs(quick) if c["id"] not in skip), key=module.work)
    impls = [impl for impl, _ in module.IMPLS]
    precheck = getattr(module, "precheck", lambda cfg, memory: None)
    watchdog = Watchdog(events)
    watchdog.start()
    for i, cfg in enumerate(todo):
        ctx.configs_left = len(todo) - i
        work = module.work(cfg)
        calls = gpu.predicted_calls(ctx, impls, work)
        predicted = budget.min_config_cost_s(calls)
        reason = precheck(cfg, memory_bytes)
        if reason is None and predicted > ctx.clock.left():
            reason = budget.skip_note(predicted, ctx.clock.left())
        if reason:
            events.row(cfg["id"], "skipped", reason)
            print(f"  {cfg['id']}: {reason}", flush=True)
            continue
        leaked = ctx.leaked_bytes()
        if leaked > LEAK_LIMIT_BYTES:
            print(f"  {leaked / 2**30:.1f} GiB still allocated: restarting the worker", flush=True)
            return EXIT_LEAK
        events.emit("start", id=cfg["id"])
        known = any(s is not None for s in calls.values())
        watchdog.arm(cfg["id"], *budget.hang_limit(predicted if known else None,
                                                   ctx.clock.config_slot(ctx.configs_left),
                                                   ctx.clock.left()))
        try:
            out = module.run(ctx, cfg)
            row = {"status": "done", "note": out["note"], "results": out["results"]}
        except gpu.ContextLost as exc:
            events.row(cfg["id"], "crashed", f"CUDA context lost: {exc}", exc.results)
            print(f"  {cfg['id']}: CUDA context lost ({exc})", flush=True)
            return EXIT_CONTEXT_LOST
        except Exception as exc:  # inputs or reference failed: recorded, the run goes on
            row = {"status": "OOM" if gpu.is_oom(exc) else "error", "note": short_error(exc),
                   "results": {}}
            gpu.forget(exc)
        finally:
            watchdog.disarm()
        events.row(cfg["id"], row["status"], row["note"], row["results"])
        print(summary(cfg["id"], row), flush=True)
        gpu.release()
        if had_oom(row) and i + 1 < len(todo):
            # What a failed call allocated may outlive it (autograd graphs, caching): the next
            # configurations get a fresh process and allocator.
            print("  out of memory: restarting the worker", flush=True)
            return EXIT_LEAK
        if row["status"] != "done" and not gpu.alive():
            return EXIT_CONTEXT_LOST
    return 0


def main(argv=None):
    args = parse_args(argv)
    events = Events(args.events)
    clock = budget.Clock.after(args.seconds)
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        from . import gpu
    except Exception as exc:  # nothing can be measured in this process
        events.emit("fatal", error=short_error(exc))
        return EXIT_FATAL
    # float32 references must be float32: no TF32 in matmuls or cuDNN convolutions.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    info = gpu.device_info()
    tessel, tessel_error = import_tessel()
    info["tessel"] = getattr(tessel, "__version__", "unknown") if tessel else None
    info["tessel_error"] = tessel_error
    events.emit("meta", **info)
    if args.workload == "ceilings":
        events.emit("ceilings", **gpu.ceilings())
        return 0
    max_reps = budget.QUICK_MAX_REPS if args.quick else budget.MAX_REPS
    ctx = gpu.Context(args.dtype, args.seed, clock, max_reps, tessel, tessel_error)
    ctx.history.update({impl: tuple(last) for impl, last in json.loads(args.history).items()})
    skip = set(filter(None, args.skip.split(",")))
    return run_workload(WORKLOADS[args.workload], ctx, events, skip, args.quick,
                        info["memory_bytes"])


if __name__ == "__main__":
    sys.exit(main())
