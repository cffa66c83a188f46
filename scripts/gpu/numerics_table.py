#!/usr/bin/env python3
"""The pass/fail table of a `pytest -v -s test/numerics/test_kernels.py` run (scripts/gpu/check.sh).

    numerics_table.py LOG [JUNIT_XML]

One row per checked output, from the lines test_kernels.py prints under each case's header: kernel,
case, dtype, output, max abs err, max rel err, verdict (ok, FAIL, info = printed for information
only; a FAIL under a mutant is expected: those tests pass when the comparison fails).  Then, from the
JUnit XML, the outcome of every test and the first line of each failure.  Standard library only.
"""

import re
import sys
import xml.etree.ElementTree as ET

HEADER = re.compile(r"^  (\S+) (.*?) \[(\w+)\]:")
MUTANT = re.compile(r"^  mutant: (.*) \(must FAIL")
ROW = re.compile(r"^    (.+?)\s+max abs\s+(\S+)\s+max rel\s+(\S+)\s+\((?:limit\s+\S+\)\s+(ok|FAIL)|information\))")


def rows(log):
    kernel = case = dtype = None
    for line in log:
        line = line.rstrip("\n")
        m = MUTANT.match(line)
        if m:
            kernel, case, dtype = "mutant", m.group(1), "f16"
            continue
        m = HEADER.match(line)
        if m:
            kernel, case, dtype = m.groups()
            continue
        m = ROW.match(line)
        if m and kernel:
            label, err, rel, verdict = m.groups()
            verdict = verdict or "info"
            if kernel == "mutant" and verdict == "FAIL":
                verdict = "FAIL (expected)"
            yield kernel, case, dtype, label.strip(), err, rel, verdict


def main(argv):
    with open(argv[1], errors="replace") as f:
        table = list(rows(f))
    head = ("kernel", "case", "dtype", "output", "max abs", "max rel", "verdict")
    widths = [max([len(h)] + [len(r[i]) for r in table]) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    print(fmt.format(*head))
    print(fmt.format(*("-" * w for w in widths)))
    for r in table:
        print(fmt.format(*r))
    bad = [r for r in table if r[6] == "FAIL"]
    print(f"\n{len(table)} outputs checked, {len(bad)} FAIL")
    if len(argv) > 2:
        try:
            suite = ET.parse(argv[2]).getroot()
        except (OSError, ET.ParseError) as error:
            print(f"(no test outcomes: {error})")
            return
        outcomes = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        failures = []
        for case in suite.iter("testcase"):
            kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), None)
            outcomes[{"failure": "failed", None: "passed"}.get(kind, kind)] += 1
            if kind in ("failure", "error"):
                msg = (case.find(kind).get("message") or "").strip().splitlines()
                failures.append((case.get("name"), msg[0][:160] if msg else ""))
        print("tests: " + ", ".join(f"{n} {k}" for k, n in outcomes.items()))
        for name, msg in failures:
            print(f"  FAILED {name}: {msg}")


if __name__ == "__main__":
    main(sys.argv)
