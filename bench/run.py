#!/usr/bin/env python3
"""Tessel against the peers a user would otherwise pick, in one run on a machine with an NVIDIA
GPU: checks each Tessel kernel against its peers on the benchmark's own inputs, times them,
and writes <out-dir>/<device>-<date>.md (a table per workload), .json (every number) and
-<workload>.png plots.

    bench/run.py [--workloads prefill,decode,kl,mta,launch] [--quick] [--budget-s 420]
                 [--out-dir bench/results] [--dtype bf16|f16] [--seed 0] [--list]
    bench/run.py launch                 (workloads may also be named as arguments)

The run keeps to --budget-s of wall-clock time (reports included; at worst a hung kernel costs
budget.GRACE_S more). The ceilings and each workload run in a process of their own (bench/
worker.py), so a faulting or hung kernel costs that configuration, not the run: the workload is
restarted after it. This process needs no torch; it assembles and writes the reports.
"""

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import budget, report  # noqa: E402
from bench.common import slug  # noqa: E402
from bench.worker import EXIT_LEAK  # noqa: E402
from bench.workloads import WORKLOADS  # noqa: E402

# Restarts of one workload after a worker died (a faulting or hung kernel each time).
MAX_RESTARTS = 3
CEILINGS_S = 60.0
# Lines of a worker's stderr echoed into the log.
STDERR_LINES = 12
# A worker is not (re)started with less time than this for its workload.
MIN_WORKER_S = 10.0


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help="comma-separated, run in this order (default: %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="two small configurations per workload, at most "
                        f"{budget.QUICK_MAX_REPS} repetitions: a smoke run")
    p.add_argument("--budget-s", type=float, default=420.0,
                   help="wall-clock budget of the whole run in seconds (default: %(default)s)")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f16"],
                   help="element type of every workload (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--list", action="store_true",
                   help="print the configurations and exit (needs no GPU)")
    p.add_argument("names", nargs="*", metavar="WORKLOAD", help="the same as --workloads")
    args = p.parse_args(argv)
    if args.names:
        args.workloads = ",".join(args.names)
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown or not args.workloads:
        p.error(f"unknown workloads {unknown}; choose from {', '.join(WORKLOADS)}")
    return args


def read_events(path):
    """The JSON records of an events file; a torn last line (a killed worker) is dropped."""
    records = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return records


def collect(records):
    """{'meta', 'ceilings', 'fatal', 'rows': {id: row}, 'in_progress': id started without a row}."""
    state = {"meta": None, "ceilings": None, "fatal": None, "rows": {}, "in_progress": None}
    for rec in records:
        kind = rec.pop("event", None)
        if kind == "meta" and state["meta"] is None:
            state["meta"] = rec
        elif kind == "ceilings":
            state["ceilings"] = rec
        elif kind == "fatal":
            state["fatal"] = rec.get("error")
        elif kind == "start":
            state["in_progress"] = rec["id"]
        elif kind == "row":
            state["rows"][rec.pop("id")] = rec
            if state["in_progress"] in state["rows"]:
                state["in_progress"] = None
    return state


def crash_note(rc, killed, stderr_tail):
    """Why a worker stopped in the middle of a configuration."""
    if killed:
        return "crashed: killed, still running past the workload's deadline (hung kernel?)"
    last = stderr_tail[-1] if stderr_tail else ""
    return f"crashed: worker exited with code {rc}" + (f" ({last})" if last else "")


class Worker:
    """One worker process at a time; killed by its process id on timeout or when the run is
    interrupted."""

    proc = None

    @classmethod
    def run(cls, cmd, env, timeout_s, stderr_path):
        with open(stderr_path, "w") as err:
            cls.proc = subprocess.Popen(cmd, env=env, stdout=None, stderr=err)
            try:
                rc, killed = cls.proc.wait(timeout=timeout_s), False
            except subprocess.TimeoutExpired:
                cls.stop()
                rc, killed = -9, True
            cls.proc = None
        with open(stderr_path) as f:
            tail = [line.rstrip() for line in f.readlines()[-STDERR_LINES:] if line.strip()]
        for line in tail:
            print(f"    [stderr] {line}", flush=True)
        return rc, killed, tail

    @classmethod
    def stop(cls):
        if cls.proc is not None and cls.proc.poll() is None:
            cls.proc.kill()
            cls.proc.wait()


def worker_command(args, workload, seconds, events, skip, history=None):
    cmd = [sys.executable, "-m", "bench.worker", "--workload", workload, "--seconds",
           f"{seconds:.1f}", "--events", events, "--dtype", args.dtype, "--seed", str(args.seed)]
    if skip:
        cmd += ["--skip", ",".join(sorted(skip))]
    if history:
        cmd += ["--history", json.dumps(history)]
    return cmd + (["--quick"] if args.quick else [])


def measured_history(module, quick, rows):
    """{implementation: (seconds per call, work)} of the largest configuration each one was timed
    on so far, as a worker keeps it: a replacement worker predicts the next configurations' costs
    (and so their hang limits) from it as its predecessor would have. Without it a slow
    configuration after a restart got only the slot's limit and was reported hung."""
    history = {}
    for cfg in sorted(module.configs(quick), key=module.work):
        for impl, res in (rows.get(cfg["id"]) or {}).get("results", {}).items():
            if isinstance(res, dict) and res.get("ms") is not None:
                history[impl] = (res["ms"] / 1e3, module.work(cfg))
    return history


def worker_env():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    return env


def run_workload(args, name, seconds, tmp, doc, rows):
    """Runs one workload within `seconds`, restarting its worker after a crash (at most
    MAX_RESTARTS times) or a leak (each worker runs a configuration before it can leak); fills
    `rows` ({id: row}) as workers finish."""
    clock = budget.Clock.after(seconds)
    restarts = launches = 0
    while True:
        events = os.path.join(tmp, f"{name}-{launches}.jsonl")
        cmd = worker_command(args, name, clock.left(), events, set(rows),
                             measured_history(WORKLOADS[name], args.quick, rows))
        rc, killed, tail = Worker.run(cmd, worker_env(), clock.left() + budget.GRACE_S,
                                      os.path.join(tmp, f"{name}-{launches}.stderr"))
        launches += 1
        state = collect(read_events(events))
        merge_meta(doc, state["meta"])
        rows.update(state["rows"])
        if state["fatal"]:
            doc["meta"]["notes"].append(f"{name}: {state['fatal']}")
            for cfg in WORKLOADS[name].configs(args.quick):
                rows.setdefault(cfg["id"], {"status": "not run", "results": {},
                                            "note": f"not run: {state['fatal']}"})
            return
        if state["in_progress"]:
            rows[state["in_progress"]] = {"status": "crashed", "results": {},
                                          "note": crash_note(rc, killed, tail)}
        if rc == EXIT_LEAK and clock.left() >= MIN_WORKER_S:
            continue
        if rc == 0 or killed or restarts >= MAX_RESTARTS or clock.left() < MIN_WORKER_S:
            if rc != 0 and not killed and restarts >= MAX_RESTARTS:
                doc["meta"]["notes"].append(f"{name}: gave up after {restarts} restarts")
            return
        restarts += 1
        print(f"[{name}] worker ended with code {rc}: restarting after the configurations "
              f"done ({len(rows)})", flush=True)


def assemble(doc, args, collected, missing_note):
    """doc['workloads'] from the rows collected so far, every configuration accounted for."""
    for name in args.workloads:
        module = WORKLOADS[name]
        doc["workloads"][name] = {
            "title": module.TITLE, "unit": module.UNIT, "ceiling": module.CEILING,
            "rows": report.workload_rows(module, args.quick, collected.get(name, {}),
                                         missing_note)}


def merge_meta(doc, meta):
    if meta and "torch" not in doc["meta"]:
        doc["meta"].update(meta)


def list_configs(args):
    for name in args.workloads:
        module = WORKLOADS[name]
        print(f"{name}: {module.TITLE}" + (f" ({module.UNIT})" if module.UNIT else ""))
        for cfg in module.configs(args.quick):
            print(f"  {cfg['id']:40s} work {module.work(cfg):.3e}")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        list_configs(args)
        return 0
    started = time.monotonic()
    clock = budget.Clock.after(args.budget_s - budget.REPORT_RESERVE_S)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    doc = report.new_document({
        "date": date, "command": " ".join(["bench/run.py", *(sys.argv[1:] if argv is None
                                                              else argv)]),
        "dtype": args.dtype, "seed": args.seed, "budget_s": args.budget_s, "quick": args.quick,
        "notes": []})
    # An outer `timeout` sends SIGTERM: stop the worker and still write what was measured.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    written = []

    def write_reports(final):
        doc["meta"]["elapsed_s"] = time.monotonic() - started
        stem = f"{slug(doc['meta'].get('device', 'unknown'))}-{date}"
        if final:
            report.plot(doc, WORKLOADS, args.out_dir, stem)
        written[:] = report.write(doc, WORKLOADS, args.out_dir, stem)

    collected = {}
    missing_note = "not run: the run was interrupted"
    with tempfile.TemporaryDirectory(prefix="tessel-bench-") as tmp:
        try:
            print("[ceilings]", flush=True)
            events = os.path.join(tmp, "ceilings.jsonl")
            rc, killed, _ = Worker.run(
                worker_command(args, "ceilings", CEILINGS_S, events, ()), worker_env(),
                min(CEILINGS_S, clock.left()), os.path.join(tmp, "ceilings.stderr"))
            state = collect(read_events(events))
            merge_meta(doc, state["meta"])
            doc["ceilings"] = state["ceilings"] or {
                "error": state["fatal"] or f"worker exited with code {rc}"
                + (" (killed at its time limit)" if killed else "")}
            print(f"  {json.dumps(doc['ceilings'])}", flush=True)
            for i, name in enumerate(args.workloads):
                seconds = budget.workload_share(clock.left(), args.workloads[i:])
                print(f"[{name}] {seconds:.0f} s", flush=True)
                collected[name] = {}
                if seconds >= MIN_WORKER_S:
                    run_workload(args, name, seconds, tmp, doc, collected[name])
                assemble(doc, args, collected, "not run: time budget spent")
                write_reports(final=False)
            missing_note = "not run: time budget spent"
        finally:
            Worker.stop()
            assemble(doc, args, collected, missing_note)
            write_reports(final=True)
    print(report.markdown(doc, WORKLOADS))
    print("written: " + ", ".join(written + [os.path.join(args.out_dir, p)
                                             for p in doc["plots"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
