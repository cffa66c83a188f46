"""The results document (JSON), its Markdown tables and the plots. Pure Python; matplotlib is
imported only to draw, and its absence is reported rather than fatal.

The document:
    {"meta": {device, date, command, versions, dtype, seed, budget_s, elapsed_s, quick, ...},
     "ceilings": {"copy_gbps", "matmul_tflops", ...} (or {"error": ...}),
     "conventions": text,
     "workloads": {name: {"title", "unit", "ceiling", "rows": [row, ...]}},
     "plots": [file names], "plot_note": text}
    row = {"id", "config", "work", "status": done|skipped|crashed|error|OOM|not run, "note",
           "results": {impl: {"status": ok|FAIL|OOM|error|unsupported, "ms", "min_ms", "max_ms",
                              "reps", "wall_ms", "err", "limit", "mem_bytes", "note"}}}
"""

import json
import math
import os

from .common import CONVENTIONS, rate, speedup

CEILING_NAMES = {"matmul_tflops": "bf16 matmul", "copy_gbps": "device-to-device copy"}
# A row's wall-clock time per call (three back-to-back calls) this much above the event time is
# flagged: more than launch overhead, so likely work the events on the current stream do not see.
WALL_FACTOR, WALL_SLACK_MS = 2.0, 0.5
# A row whose fastest call took less than this share of the median is flagged: its calls vary
# (a call bound by its host path, whose event time is the host's when the GPU waits for it).
SPREAD_FACTOR = 0.75


def new_document(meta):
    return {"meta": dict(meta), "ceilings": {}, "conventions": CONVENTIONS, "workloads": {},
            "plots": [], "plot_note": ""}


def workload_rows(module, quick, rows_by_id, missing_note):
    """The workload's rows in table order: the recorded ones, and `missing_note` for the rest."""
    rows = []
    for cfg in module.configs(quick):
        row = rows_by_id.get(cfg["id"]) or {"status": "not run", "note": missing_note,
                                            "results": {}}
        rows.append({**row, "id": cfg["id"], "config": cfg, "work": module.work(cfg)})
    return rows


def clean(obj):
    """obj with non-finite floats as None: strict JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


# ---------------------------------------------------------------------------------------------
# cells

def fmt_ms(ms):
    return f"{ms:.3g} ms" if ms >= 0.1 else f"{ms * 1e3:.3g} µs"


def fmt_rate(r):
    return f"{r:.1f}" if r < 100 else f"{r:.0f}"


def fmt_bytes(b):
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= size:
            return f"{b / size:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_err(e):
    return "—" if e is None else ("inf" if not math.isfinite(e) else f"{e:.1e}")


def escape(text):
    return " ".join(str(text).split()).replace("|", "\\|")


def impl_cell(res, work, unit, ceiling):
    """'0.412 ms · 167 TFLOP/s (21%)', with the peak extra memory where measured; the status
    instead of numbers where there are none; FAIL in bold before the numbers of a failed check."""
    status = res.get("status")
    if res.get("ms") is None:
        if status in ("error", "unsupported"):
            label = "error" if status == "error" else "n/a"
            return escape(f"{label}: {res.get('note', '')}"[:90])
        return status or "—"
    text = fmt_ms(res["ms"])
    if unit:                    # else a workload of times only (launch)
        r = rate(work, res["ms"], unit)
        text += f" · {fmt_rate(r)} {unit}"
        if ceiling:
            text += f" ({100 * r / ceiling:.0f}%)"
    if res.get("mem_bytes") is not None:
        text += f" · +{fmt_bytes(res['mem_bytes'])}"
    return f"**FAIL** {text}" if status == "FAIL" else text


def ratio_cell(results, tessel, peer):
    s = speedup(results, tessel, peer)
    if s is None:
        return "—"
    return f"{s:.2f}×" + (" (FAIL)" if results[tessel].get("status") == "FAIL" else "")


def check_cell(results, impls):
    errs = [results.get(impl, {}).get("err") for impl, _ in impls]
    if all(e is None for e in errs):
        return "—"
    limits = [r["limit"] for r in results.values() if "limit" in r]
    tail = f" (≤ {limits[0]:.0e})" if limits else ""
    return " / ".join(fmt_err(e) for e in errs) + tail


def wall_flag(res):
    wall, ms = res.get("wall_ms"), res.get("ms")
    if wall is None or ms is None or wall <= WALL_FACTOR * ms + WALL_SLACK_MS:
        return None
    return f"wall {fmt_ms(wall)}/call"


def spread_flag(res):
    fastest, ms = res.get("min_ms"), res.get("ms")
    if fastest is None or ms is None or fastest >= SPREAD_FACTOR * ms:
        return None
    return f"fastest call {fmt_ms(fastest)}"


def notes_cell(row, impls):
    notes = [row["note"]] if row.get("note") else []
    for impl, label in impls:
        res = row["results"].get(impl, {})
        extra = [res["note"]] if res.get("note") and res.get("ms") is not None else []
        extra += [flag for flag in (wall_flag(res), spread_flag(res)) if flag]
        notes += [f"{label}: {n}" for n in extra]
    return escape("; ".join(notes))


# ---------------------------------------------------------------------------------------------
# Markdown

def workload_table(module, entry, ceilings):
    ceiling = ceilings.get(module.CEILING)
    head = [h for _, h in module.COLUMNS] + [h for _, h in module.IMPLS] + \
        [h for _, _, h in module.RATIOS] + ["errors (limit)", "notes"]
    lines = [f"## {module.TITLE}", ""]
    if ceiling:
        lines += [f"Rates in {module.UNIT}; percentages of the {CEILING_NAMES[module.CEILING]} "
                  f"ceiling measured in this run ({fmt_rate(ceiling)} {module.UNIT}). Speedup = "
                  f"peer time / Tessel time.", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in entry["rows"]:
        cfg, results = row["config"], row["results"]
        cells = [escape(cfg[key]) for key, _ in module.COLUMNS]
        if row["status"] == "done" or results:
            cells += [impl_cell(results.get(impl, {}), row["work"], module.UNIT, ceiling)
                      for impl, _ in module.IMPLS]
            cells += [ratio_cell(results, t, p) for t, p, _ in module.RATIOS]
            cells += [check_cell(results, module.IMPLS)]
        else:
            cells += [row["status"]] + [""] * (len(module.IMPLS) + len(module.RATIOS))
        cells.append(notes_cell(row, module.IMPLS))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def markdown(doc, workloads):
    meta, ceil = doc["meta"], doc["ceilings"]
    lines = [f"# Tessel benchmarks: {meta.get('device', 'unknown device')}, "
             f"{meta.get('date', '')}", ""]
    lines.append(f"- command: `{meta.get('command', '')}`")
    tessel = meta.get("tessel") or f"not importable ({meta.get('tessel_error')})"
    lines.append(f"- software: torch {meta.get('torch')}, CUDA {meta.get('cuda')}, cuDNN "
                 f"{meta.get('cudnn')}, tessel {escape(tessel)}")
    lines.append(f"- dtype {meta.get('dtype')}, seed {meta.get('seed')}, budget "
                 f"{meta.get('budget_s')} s, elapsed {meta.get('elapsed_s', 0):.0f} s"
                 f"{', quick run' if meta.get('quick') else ''}")
    if "copy_gbps" in ceil:
        lines.append(f"- ceilings measured in this run: device-to-device copy "
                     f"{ceil['copy_gbps']:.0f} GB/s (bytes read + written), bf16 matmul "
                     f"{'×'.join(map(str, ceil['matmul_shape']))} "
                     f"{ceil['matmul_tflops']:.0f} TFLOP/s")
    else:
        lines.append(f"- ceilings: not measured ({escape(ceil.get('error', 'not run'))})")
    if doc["plots"]:
        lines.append("- plots: " + ", ".join(f"[{p}]({p})" for p in doc["plots"]))
    if doc["plot_note"]:
        lines.append(f"- {doc['plot_note']}")
    for note in meta.get("notes", []):
        lines.append(f"- {escape(note)}")
    lines += ["", "## Conventions", "", doc["conventions"]]
    for name, entry in doc["workloads"].items():
        lines.append(workload_table(workloads[name], entry, ceil))
    return "\n".join(lines)


def write(doc, workloads, out_dir, stem):
    """Writes <stem>.json and <stem>.md into out_dir; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = [os.path.join(out_dir, f"{stem}.json"), os.path.join(out_dir, f"{stem}.md")]
    with open(paths[0] + ".tmp", "w") as f:
        json.dump(clean(doc), f, indent=1, allow_nan=False)
    with open(paths[1] + ".tmp", "w") as f:
        f.write(markdown(doc, workloads))
    for path in paths:
        os.replace(path + ".tmp", path)
    return paths


# ---------------------------------------------------------------------------------------------
# plots

def points(rows, x_key, value, **match):
    """[(x, y)] over the rows whose config matches `match`, y = value(row) where not None."""
    out = []
    for row in rows:
        if all(row["config"].get(k) == v for k, v in match.items()):
            y = value(row)
            if y is not None:
                out.append((row["config"][x_key], y))
    return sorted(out)


def _ms(impl):
    return lambda row: row["results"].get(impl, {}).get("ms")


def _plot_decode(plt, module, rows):
    fig, ax = plt.subplots(figsize=(8, 5))
    for series, style in (("ctx-mha", "-"), ("ctx-gqa", "--")):
        for tessel, peer, header in module.RATIOS:
            xy = points(rows, "Nk", lambda r, t=tessel, p=peer: speedup(r["results"], t, p),
                        series=series)
            if xy:
                ax.plot(*zip(*xy), style, marker="o", label=f"{series} stream-K {header}")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="context length Nk", ylabel="speedup (peer time / Tessel time)",
           title="Decode: Tessel stream-K vs peers (B1; MHA H32, GQA H64:8)")
    return fig, ax


def _plot_prefill(plt, module, rows):
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
    for ax, (D, causal) in zip(axes.flat, [(d, c) for d in (64, 128) for c in (False, True)]):
        for impl, label in module.IMPLS:
            xy = points(rows, "N", lambda r, i=impl: rate(r["work"], _ms(i)(r), module.UNIT),
                        D=D, causal=causal)
            if xy:
                ax.plot(*zip(*xy), marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set(title=f"D{D} {'causal' if causal else 'non-causal'}", xlabel="N",
               ylabel=module.UNIT)
    fig.suptitle("Prefill: attention forward, B1 H32")
    return fig, axes.flat[0]


def _plot_kl(plt, module, rows):
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(12, 5))
    for impl, label in module.IMPLS:
        for mode, style in (("fwd", "-"), ("fwd+bwd", "--")):
            t = points(rows, "N", _ms(impl), mode=mode)
            m = points(rows, "N", lambda r, i=impl: (r["results"].get(i, {}).get("mem_bytes")
                                                     or 0) / 1e9 or None, mode=mode)
            if t:
                ax_t.plot(*zip(*t), style, marker="o", label=f"{label} {mode}")
            if m:
                ax_m.plot(*zip(*m), style, marker="o", label=f"{label} {mode}")
    for ax in (ax_t, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    ax_t.set(xlabel="N", ylabel="time (ms)", title="StreamKL time (B1 H16 D128 causal)")
    ax_m.set(xlabel="N", ylabel="peak extra memory (GB)", title="StreamKL memory")
    ax_m.legend()
    return fig, ax_t


PLOTS = {"decode": _plot_decode, "prefill": _plot_prefill, "kl": _plot_kl}


def plot(doc, workloads, out_dir, stem):
    """Draws a PNG per plotted workload in the document; sets doc['plots'] (file names) and
    doc['plot_note'] (why some or all are missing)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        doc["plots"], doc["plot_note"] = [], "matplotlib is not installed: no plots"
        return
    doc["plots"], empty, failed = [], [], []
    for name, draw in PLOTS.items():
        if name not in doc["workloads"]:
            continue
        file = f"{stem}-{name}.png"
        try:
            fig, ax = draw(plt, workloads[name], doc["workloads"][name]["rows"])
            if not any(a.get_legend_handles_labels()[0] for a in fig.axes):
                empty.append(name)
            else:
                ax.legend(fontsize="small")
                fig.tight_layout()
                fig.savefig(os.path.join(out_dir, file), dpi=110)
                doc["plots"].append(file)
            plt.close(fig)
        except Exception as exc:  # a plot must not lose the tables
            failed.append(f"{name} ({type(exc).__name__}: {exc})")
    notes = ([f"nothing to plot for {', '.join(empty)}"] if empty else []) + \
        ([f"plots that failed: {', '.join(failed)}"] if failed else [])
    doc["plot_note"] = "; ".join(notes)
