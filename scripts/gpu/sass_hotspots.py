#!/usr/bin/env python3
"""Where a kernel's warps wait, per SASS instruction, from Nsight Compute's source page
(`ncu -i REPORT --page source --csv --print-source sass`, as scripts/gpu/profile.sh writes it with
NCU_SOURCE=1).

    sass_hotspots.py SOURCE.csv [--top 40] [--window 40]

Prints, for each profiled launch on the page, the warp-state samples by opcode (the first word
of the instruction, without predicates and modifiers) and the instructions with the most
samples, each with the stall reasons that hold most of its samples; with --window N also the
runs of N consecutive instructions with the most samples (where in the program the time goes).
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


def sections(path):
    """[(kernel name, rows)] of the page: one section per profiled launch, each a "Kernel Name"
    line, then the table's header and its instructions."""
    with open(path, newline="") as f:
        lines = [row for row in csv.reader(f) if row]
    found, name, header = [], "?", None
    for row in lines:
        if row[0] == "Kernel Name":
            name, header = (row[1] if len(row) > 1 else "?"), None
        elif row[0] in ("Address", "# Address", "Source") and "Source" in row:
            header = row
            found.append((name, []))
        elif header and len(row) == len(header):
            found[-1][1].append(dict(zip(header, row)))
    return [(n, rows) for n, rows in found if rows]


def summarise(name, rows, top, window):
    columns = list(rows[0])
    total = next(c for c in columns if re.match(r"Warp Stall Sampling \(All", c))
    # Per-reason columns of all samples (the "(Not Issued)" ones are a subset of them).
    reasons = [c for c in columns if c.startswith("stall_") and "Not Issued" not in c]
    samples = max(sum(number(r[total]) for r in rows), 1)
    print(f"== {name}: {len(rows)} instructions, {samples:.0f} samples ({total})")
    by_op = collections.Counter()
    for r in rows:
        by_op[opcode(r["Source"])] += number(r[total])
    print("by opcode: " + ", ".join(f"{op} {100 * n / samples:.1f}%" for op, n in by_op.most_common(16)))
    if reasons:
        overall = collections.Counter({c: sum(number(r[c]) for r in rows) for c in reasons})
        print("by reason: " + ", ".join(f"{c[len('stall_'):]} {100 * n / samples:.1f}%"
                                         for c, n in overall.most_common(10) if n))
    if window:
        # Where in the program: runs of `window` instructions with the most samples.
        runs = [(sum(number(r[total]) for r in rows[i:i + window]), i)
                for i in range(0, len(rows), window)]
        for n, i in sorted(runs, reverse=True)[:10]:
            ops = collections.Counter(opcode(r["Source"]) for r in rows[i:i + window])
            print(f"{100 * n / samples:5.1f}% instructions {i}-{i + window - 1}: "
                  + ", ".join(f"{op} x{k}" for op, k in ops.most_common(6)))
    for r in sorted(rows, key=lambda r: -number(r[total]))[:top]:
        n = number(r[total])
        why = sorted(((number(r[c]), c[len("stall_"):]) for c in reasons), reverse=True)[:3]
        addr = r.get("Address", r.get("# Address", ""))
        print(f"{100 * n / samples:5.1f}% {addr:>6} {r['Source'][:70]:70s} "
              + " ".join(f"{w}:{100 * v / max(n, 1):.0f}%" for v, w in why if v))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--window", type=int, default=0,
                   help="also the runs of this many instructions with the most samples")
    a = p.parse_args()
    found = sections(a.csv)
    if not found:
        raise SystemExit(f"{a.csv}: no instructions")
    for name, rows in found:
        summarise(name, rows, a.top, a.window)


if __name__ == "__main__":
    main()
