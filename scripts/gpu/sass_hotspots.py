#!/usr/bin/env python3
"""Where a kernel's warps wait, per SASS instruction, from Nsight Compute's source page
(`ncu -i REPORT --page source --csv --print-source sass`, as scripts/gpu/profile.sh writes it with
NCU_SOURCE=1).

    sass_hotspots.py SOURCE.csv [--top 40]

Prints the warp-state samples by opcode (the first word of the instruction, without
predicates and modifiers) and the instructions with the most samples, each with the stall
reasons that hold most of its samples.
"""
import argparse
import collections
import csv
import re


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(sass):
    words = [w for w in sass.split() if not w.startswith("@")]
    return words[0].split(".")[0] if words else "?"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--top", type=int, default=40)
    a = p.parse_args()
    with open(a.csv, newline="") as f:
        lines = [line for line in f if line.strip()]
    # The page may start with lines that are not the table (the kernel's name).
    start = next(i for i, line in enumerate(lines) if '"Source"' in line or line.startswith("Source"))
    rows = list(csv.DictReader(lines[start:]))
    if not rows:
        raise SystemExit(f"{a.csv}: no instructions")
    columns = list(rows[0])
    total = next(c for c in columns if re.match(r"Warp Stall Sampling \(All", c))
    # Per-reason columns of all samples (the "(Not Issued)" ones are a subset of them).
    reasons = [c for c in columns if c.startswith("stall_") and "Not Issued" not in c]
    samples = sum(number(r[total]) for r in rows)
    print(f"{len(rows)} instructions, {samples:.0f} samples ({total})")
    by_op = collections.Counter()
    for r in rows:
        by_op[opcode(r["Source"])] += number(r[total])
    print("by opcode: " + ", ".join(f"{op} {100 * n / samples:.1f}%" for op, n in by_op.most_common(16)))
    if reasons:
        overall = collections.Counter({c: sum(number(r[c]) for r in rows) for c in reasons})
        print("by reason: " + ", ".join(f"{c[len('stall_'):]} {100 * n / samples:.1f}%"
                                         for c, n in overall.most_common(10) if n))
    for r in sorted(rows, key=lambda r: -number(r[total]))[:a.top]:
        n = number(r[total])
        why = sorted(((number(r[c]), c[len("stall_"):]) for c in reasons), reverse=True)[:3]
        addr = r.get("Address", r.get("# Address", ""))
        print(f"{100 * n / samples:5.1f}% {addr:>6} {r['Source'][:70]:70s} "
              + " ".join(f"{w}:{100 * v / max(n, 1):.0f}%" for v, w in why if v))


if __name__ == "__main__":
    main()
