#!/usr/bin/env python3
"""Every kernel of kernels/ once under compute-sanitizer, through tessel-run's bundle mode.

The runs are the lines of sanitize_cases.txt (NAME FILE.tsl, then tessel-run's options): small,
ragged shapes, seeded inputs.  Three steps, on two machines:

  record (development machine, with the compiler; scripts/gpu/record_bundles.sh calls it):
      sanitize.py record --tesselc build/bin/tesselc --bundles .gpu-bundles/sanitize
    compiles each line's kernel with its -D values to NAME.bundle.
  run (machine with an NVIDIA GPU; scripts/gpu/sanitize.sh and check.sh call it):
      sanitize.py run --tessel-run BUILD/bin/tessel-run --bundles .gpu-bundles/sanitize --out DIR
    runs each bundle once per tool (memcheck, racecheck, synccheck) under compute-sanitizer, writes
    each log to DIR/NAME.TOOL.log and prints a table (kernel, tool, errors) with the totals.  First a
    control: the first line with one input buffer cut short must make memcheck report errors, so a
    sanitizer that checks nothing cannot pass (that buffer must be read by plain loads: memcheck
    does not see the tensor memory accelerator's copies).  Exit status 1 on any error, failed run
    or timeout.
  CI checks the lines on the CPU interpreter (test/numerics/test_sanitize_cases.py): shapes and
  strides that fit, every kernel of kernels/ covered.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CASES = os.path.join(HERE, "sanitize_cases.txt")
TOOLS = ("memcheck", "racecheck", "synccheck")
ERROR_EXIT = 86  # compute-sanitizer's exit status when it found errors


class Case:
    def __init__(self, name, tsl, options):
        self.name, self.tsl, self.options = name, tsl, options

    @property
    def kernel(self):
        return self.options[self.options.index("--kernel") + 1]

    @property
    def defines(self):
        return [self.options[i + 1] for i, o in enumerate(self.options) if o == "-D"]

    def bundle_options(self):
        """The options without -D: a bundle is specialised already."""
        out, skip = [], False
        for o in self.options:
            if skip or o == "-D":
                skip = not skip
                continue
            out.append(o)
        return out


def read_cases(path=CASES):
    """The cases of a case file: one per logical line (a trailing backslash continues it)."""
    text = open(path).read().replace("\\\n", " ")
    cases = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            if len(words) < 4 or "--kernel" not in words:
                raise ValueError(f"{path}: expected NAME FILE.tsl --kernel K ..., got {line!r}")
            cases.append(Case(words[0], words[1], words[2:]))
    return cases


def control(case):
    """`case` with its first buffer argument cut to one element: memcheck must flag it."""
    options = list(case.options)
    for i, o in enumerate(options):
        m = re.fullmatch(r"([A-Za-z_]\w*)=(\w+)\[\d+\](.*)", o)
        if i > 0 and options[i - 1] == "--arg" and m:
            options[i] = f"{m.group(1)}={m.group(2)}[1]{m.group(3)}"
            return Case(case.name + "-control", case.tsl, options)
    raise ValueError(f"case {case.name} has no buffer argument")


def count_errors(log):
    """(errors, warnings) from compute-sanitizer's summary in a log, or None where it printed none
    (memcheck and synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: N hazards
    displayed (E errors, W warnings)")."""
    m = re.search(r"^=+ RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)",
                  log, re.M)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.search(r"^=+ ERROR SUMMARY: (\d+) errors?$", log, re.M)
    return (int(m.group(1)), 0) if m else None


def chosen(cases, names):
    """The cases named in `names` (comma-separated; all of them if empty), refusing unknown names;
    the control's first line is recorded and run whichever are chosen."""
    if not names:
        return cases
    wanted = names.split(",")
    unknown = sorted(set(wanted) - {c.name for c in cases})
    if unknown:
        sys.exit(f"no such case in {CASES}: {', '.join(unknown)}")
    return [c for i, c in enumerate(cases) if i == 0 or c.name in wanted]


def record(args):
    os.makedirs(args.bundles, exist_ok=True)
    for case in chosen(read_cases(), args.cases):
        cmd = [args.tesselc, os.path.join(ROOT, "kernels", case.tsl), "--kernel", case.kernel]
        for d in case.defines:
            cmd += ["-D", d]
        cmd += ["--target", args.target, "--emit=bundle",
                "-o", os.path.join(args.bundles, case.name + ".bundle")]
        subprocess.run(cmd, check=True)
    return 0


def sanitizer():
    path = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.access(path, os.X_OK):
        sys.exit("compute-sanitizer not found (PATH, /usr/local/cuda/bin)")
    return path


def sanitize(args, case, tool, bundle):
    """Runs one case under one tool: (errors, warnings, problem), `problem` saying why the run
    itself failed (errors None when there is no summary to count)."""
    log_path = os.path.join(args.out, f"{case.name}.{tool}.log")
    cmd = [sanitizer(), "--tool", tool, "--error-exitcode", str(ERROR_EXIT), "--print-limit", "20"]
    if tool == "racecheck":
        cmd += ["--racecheck-report", "analysis"]
    cmd += [args.tessel_run, os.path.join(args.bundles, bundle + ".bundle")] + case.bundle_options()
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                                timeout=args.timeout).returncode
        except subprocess.TimeoutExpired:
            return None, 0, f"timeout after {args.timeout} s"
    with open(log_path, errors="replace") as log:
        counts = count_errors(log.read())
    if counts is None:
        return None, 0, f"no sanitizer summary (exit status {rc})"
    errors, warnings = counts
    # With errors the sanitizer exits ERROR_EXIT; otherwise the status is tessel-run's.
    if rc != (ERROR_EXIT if errors else 0):
        return errors, warnings, f"tessel-run failed (exit status {rc})"
    return errors, warnings, None


def run(args):
    os.makedirs(args.out, exist_ok=True)
    cases = chosen(read_cases(), args.cases)
    tools = args.tools.split(",")
    failing = 0

    probe = control(cases[0])
    errors, _, _ = sanitize(args, probe, "memcheck", cases[0].name)
    print(f"control: {probe.name} ({cases[0].name} with its first buffer cut to one element) "
          f"under memcheck: {errors} errors, {'detected' if errors else 'NOT DETECTED: FAIL'}")
    failing += not errors

    print(f"{'kernel':<26} {'tool':<10} {'errors':>6} {'warnings':>8}  status")
    total = 0
    for case in cases:
        for tool in tools:
            start = time.monotonic()
            errors, warnings, problem = sanitize(args, case, tool, case.name)
            bad = bool(errors) or problem is not None
            failing += bad
            total += errors or 0
            status = (f"FAIL: {problem}" if problem else
                      f"{'FAIL' if bad else 'ok'} ({time.monotonic() - start:.1f} s)")
            print(f"{case.name:<26} {tool:<10} {'-' if errors is None else errors:>6} "
                  f"{warnings:>8}  {status}", flush=True)
    print(f"sanitizer totals: {len(cases)} kernels x {len(tools)} tools, {total} errors, "
          f"{failing} failing runs (the control included); logs in {args.out}")
    return 1 if failing else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="compile the cases' bundles (needs tesselc)")
    rec.add_argument("--tesselc", required=True)
    rec.add_argument("--target", default="sm_90", choices=("sm_80", "sm_90", "sm_90a"))
    rec.add_argument("--bundles", required=True)
    rec.add_argument("--cases", default="", help="only these lines (comma-separated names)")
    rec.set_defaults(func=record)
    gpu = sub.add_parser("run", help="run the bundles under compute-sanitizer (needs a GPU)")
    gpu.add_argument("--tessel-run", required=True)
    gpu.add_argument("--bundles", required=True)
    gpu.add_argument("--out", required=True)
    gpu.add_argument("--tools", default=",".join(TOOLS))
    gpu.add_argument("--timeout", type=int, default=120, help="seconds per run")
    gpu.add_argument("--cases", default="", help="only these lines (comma-separated names)")
    gpu.set_defaults(func=run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
