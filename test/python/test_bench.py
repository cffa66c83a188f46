"""The pure parts of the benchmark harness (bench/): configuration lists, FLOP/byte formulas,
verdicts, the time budget, the reports, and bench/run.py's handling of its worker processes
(driven here by a fake worker that needs no GPU). None of this imports torch."""

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)

from bench import budget, common, report  # noqa: E402
from bench import run as bench_run  # noqa: E402
from bench import worker as bench_worker  # noqa: E402
from bench.workloads import WORKLOADS, decode, kl, launch, mta, prefill, prefill_bwd  # noqa: E402

H100_MEMORY = 81559 << 20  # what an H100 80GB reports


def test_pure_modules_do_not_import_torch():
    """The parent process and the reports run where torch is absent: only the worker imports it."""
    code = ("import sys; import bench.run, bench.report, bench.worker, bench.workloads; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


# ---------------------------------------------------------------------------------------------
# configurations and formulas

@pytest.mark.parametrize("name", list(WORKLOADS))
def test_configs_have_unique_ids_and_quick_is_a_subset(name):
    module = WORKLOADS[name]
    full, quick = module.configs(False), module.configs(True)
    ids = [c["id"] for c in full]
    assert len(ids) == len(set(ids))
    assert 0 < len(quick) < len(full)
    assert {c["id"] for c in quick} <= set(ids)
    for cfg in full:
        assert all(key in cfg for key, _ in module.COLUMNS)
        assert module.work(cfg) > 0
    impls = [impl for impl, _ in module.IMPLS]
    assert common.is_tessel(impls[0])
    for tessel, peer, _ in module.RATIOS:
        assert common.is_tessel(tessel) and tessel in impls and peer in impls


def test_prefill_covers_the_issue_shapes():
    got = {(c["B"], c["H"], c["N"], c["D"], c["causal"]) for c in prefill.configs()}
    assert got == {(1, 32, n, d, c) for n in (1024, 4096, 8192, 16384) for d in (64, 128)
                   for c in (False, True)}


def test_prefill_backward_covers_the_issue_shapes():
    got = {(c["B"], c["H"], c["N"], c["D"], c["causal"]) for c in prefill_bwd.configs()}
    assert got == {(1, 32, n, d, c) for n in (4096, 8192, 16384) for d in (128, 64)
                   for c in (False, True)}
    assert len({c["id"] for c in prefill_bwd.configs()} |
               {c["id"] for c in prefill.configs()}) == len(prefill_bwd.configs()) + \
        len(prefill.configs())                     # ids unique across the two tables
    # FlashAttention's count: the backward is 2.5 forwards.
    assert prefill_bwd.flops(1, 32, 4096, 4096, 128, False) == \
        3.5 * 4 * 32 * 4096 * 4096 * 128
    assert prefill_bwd.flops(1, 32, 4096, 4096, 128, True) == \
        3.5 * 2 * 32 * 4096 * 4096 * 128


def test_prefill_check_rows():
    rows = prefill.check_rows(16384)
    assert rows == sorted(set(rows)) and rows[0] == 0 and rows[-1] == 16383
    assert set(range(16384 - 64, 16384)) <= set(rows) and len(rows) <= 128
    assert prefill.check_rows(10) == list(range(10))


def test_decode_sweep_covers_every_value():
    cfgs = decode.configs()
    assert {c["Nk"] for c in cfgs} == {1024 << i for i in range(10)}
    assert {c["H"] for c in cfgs} == {8, 16, 24, 32, 56, 64, 128}
    assert {c["B"] for c in cfgs} == {1, 4, 16}
    assert all(c["D"] == 128 for c in cfgs)
    assert any(c["H"] == 8 * c["HKV"] for c in cfgs)            # GQA 8:1
    assert all(c["H"] % c["HKV"] == 0 for c in cfgs)
    # full context sweeps for the plot, MHA and GQA
    for series in ("ctx-mha", "ctx-gqa"):
        assert sorted(c["Nk"] for c in cfgs if c["series"] == series) == list(decode.CONTEXTS)


def test_decode_skips_only_what_does_not_fit_on_an_h100():
    skipped = [c["id"] for c in decode.configs() if decode.precheck(c, H100_MEMORY)]
    assert skipped == ["large-B16-H128-KV128-N524288"]
    note = decode.precheck(decode.config("large", 16, 128, 128, 524288), H100_MEMORY)
    assert note.startswith("skipped:") and "550 GB" in note


def test_formulas():
    assert prefill.flops(1, 32, 1024, 1024, 64, False) == 4 * 32 * 1024 * 1024 * 64
    assert prefill.flops(1, 32, 1024, 1024, 64, True) == 2 * 32 * 1024 * 1024 * 64
    assert decode.kv_bytes(2, 8, 1024) == 2 * 2 * 8 * 1024 * 128 * 2
    assert decode.work(decode.config("x", 1, 64, 8, 1024)) == decode.kv_bytes(1, 8, 1024)
    n2 = 4096 * 4096
    assert kl.flops(1, 16, 4096, 4096, 128, 128, False, False) == 2 * 16 * n2 * 256
    assert kl.flops(1, 16, 4096, 4096, 128, 64, True, True) == (2 * 16 * n2 * 192
                                                                + 4 * 16 * n2 * 64) / 2
    attention, conv = 4 * 16 * n2 * 64 / 2, 2 * 16 * n2 * 6 * 11 / 2
    assert mta.flops(1, 16, 4096, 64, 6, 11, False) == attention + conv
    assert mta.flops(1, 16, 4096, 64, 6, 11, True) == 3.5 * attention + 3 * conv
    # decode: the 6 newest queries' scores, one row of convolution, P·V
    assert mta.decode_flops(1, 16, 4096, 64, 6, 11) == 2 * 16 * 4096 * (6 * 64 + 6 * 11 + 64)
    assert mta.work(mta.config(4096, "decode")) == mta.decode_flops(1, 16, 4096, 64, 6, 11)
    assert mta.kv_bytes(mta.config(4096, "decode")) == 2 * 16 * 4096 * 64 * 2


def test_mta_rows_include_decode():
    """Forward and forward + backward up to 4k, the decode step (one row) from 4k to 64k; the
    quick run has one of each mode."""
    cfgs = mta.configs()
    assert {(c["N"], c["mode"]) for c in cfgs} == \
        {(n, m) for n in (1024, 2048, 4096) for m in ("fwd", "fwd+bwd")} | \
        {(n, "decode") for n in (4096, 16384, 65536)}
    assert [c["mode"] for c in mta.configs(True)] == ["fwd", "fwd+bwd", "decode"]
    assert mta.config(65536, "decode")["id"] == "N65536-decode"
    # a decode step costs less than the forward of its context, so it runs before it
    assert mta.work(mta.config(4096, "decode")) < mta.work(mta.config(1024, "fwd"))


def test_launch_rows_cover_the_issue():
    """An empty kernel through kernel[grid] and tiny ready ops, each against torch.add, Triton's
    launch and the bare driver launch, with the CUDA-graph replay of the Tessel call and of SDPA's
    cuDNN back end; the decode rows are the decode-latency targets' shapes."""
    assert [c["id"] for c in launch.configs()] == [
        "empty-kernel", "attention-B1-H1-N64-D64", "decode-B1-H8-KV8-N1024-D128",
        "decode-B1-H8-KV8-N16384-D128", "decode-B1-H32-KV32-N8192-D128",
        "decode-B1-H32-KV4-N131072-D128"]
    assert [c["id"] for c in launch.configs(quick=True)] == [
        "empty-kernel", "decode-B1-H8-KV8-N1024-D128"]
    gqa = launch.configs()[-1]
    assert gqa["q"] == (1, 32, 1, 128) and gqa["kv"] == (1, 4, 131072, 128)
    assert gqa["shape"] == "B1 H32/4 Nq1 Nk131072 D128"
    assert {c["op"] for c in launch.configs() if "op" in c} == {"attention", "lean_attention"}
    impls = [impl for impl, _ in launch.IMPLS]
    assert impls == ["tessel", "tessel-graph", "sdpa", "sdpa-graph", "torch-add", "triton",
                     "driver"]
    assert launch.UNIT is None and launch.CEILING is None
    assert os.path.isfile(launch.EMPTY_KERNEL)
    row = {"id": "empty-kernel", "config": launch.configs()[0], "work": 1, "status": "done",
           "note": "", "results": {"tessel": {"status": "ok", "ms": 0.0123},
                                   "torch-add": {"status": "ok", "ms": 0.0061},
                                   "triton": {"status": "unsupported",
                                              "note": "unsupported: Triton is not installed"}}}
    table = report.workload_table(launch, {"rows": [row]}, {})
    line = next(t for t in table.splitlines() if t.startswith("| kernel[(1,)](x)"))
    assert "| 12.3 µs | — | — | — | 6.1 µs | n/a: unsupported: Triton is not installed |" in line
    assert "0.50×" in line                          # torch.add 6.1 µs / Tessel 12.3 µs


def test_workloads_named_as_arguments():
    assert bench_run.parse_args(["launch"]).workloads == ["launch"]
    assert bench_run.parse_args(["decode", "launch"]).workloads == ["decode", "launch"]
    with pytest.raises(SystemExit):
        bench_run.parse_args(["nope"])


def test_mta_decode_note():
    cfg = mta.config(4096, "decode")                 # K/V: 16.8 MB
    results = {"tessel": {"status": "ok", "ms": 0.01}, "torch": {"status": "error"}}
    assert mta.decode_note(cfg, results, 2) == "K/V read: tessel 1678 GB/s"
    assert mta.decode_note(cfg, {"torch": {"status": "OOM"}}, 2) == ""


def test_rate_and_speedup():
    assert common.rate(1e12, 1.0, "TFLOP/s") == pytest.approx(1000.0)
    assert common.rate(3e9, 1.0, "GB/s") == pytest.approx(3000.0)
    assert common.rate(1e9, None, "GB/s") is None
    results = {"tessel": {"ms": 2.0}, "peer": {"ms": 3.0}, "oom": {"status": "OOM"}}
    assert common.speedup(results, "tessel", "peer") == pytest.approx(1.5)
    assert common.speedup(results, "tessel", "oom") is None
    assert common.speedup(results, "tessel", "absent") is None


# ---------------------------------------------------------------------------------------------
# verdicts

def test_judge():
    results = {"tessel": {"status": "timed", "err": 0.015},
               "peer-a": {"status": "timed", "err": 0.003},
               "peer-b": {"status": "OOM"}}
    common.judge(results, 0.02)
    assert results["tessel"]["status"] == "ok" and results["peer-a"]["status"] == "ok"
    assert results["tessel"]["limit"] == 0.02 and "limit" not in results["peer-b"]
    assert results["peer-b"]["status"] == "OOM"
    bad = {"tessel": {"status": "timed", "err": 0.05}, "peer": {"status": "timed", "err": 0.01}}
    assert common.judge(bad, 0.02)["tessel"]["status"] == "FAIL"
    # where the best peer is far from the reference too, 2x its error passes
    hard = {"tessel": {"status": "timed", "err": 0.05}, "peer": {"status": "timed", "err": 0.03}}
    assert common.judge(hard, 0.02)["tessel"]["status"] == "ok"
    assert hard["tessel"]["limit"] == pytest.approx(0.06)
    nan = {"tessel": {"status": "timed", "err": math.inf}}
    assert common.judge(nan, 0.02)["tessel"]["status"] == "FAIL"
    assert common.tolerance("bf16") == 2e-2 and common.tolerance("f16", grads=True) == 2.5e-2


def test_short_error_keeps_the_warnings_that_explain_it():
    exc = RuntimeError("No available kernel.\nAborting execution.")
    exc.add_note("Flash attention kernel not used because:\n head dim 96")
    assert common.short_error(exc) == ("RuntimeError: No available kernel.; "
                                       "Flash attention kernel not used because: head dim 96")
    assert len(common.short_error(ValueError("x" * 1000))) == 400
    assert common.short_error(KeyError()) == "KeyError"


def test_slug():
    assert common.slug("NVIDIA H100 80GB HBM3") == "h100-80gb-hbm3"
    assert common.slug("") == "unknown-device"


# ---------------------------------------------------------------------------------------------
# budget

def test_workload_shares_use_all_the_time():
    names, left, shares = ["prefill", "decode", "kl", "mta"], 400.0, []
    for i in range(len(names)):
        shares.append(budget.workload_share(left, names[i:]))
        left -= shares[-1]
    assert sum(shares) == pytest.approx(400.0) and left == pytest.approx(0.0)
    assert shares[0] == pytest.approx(400 * 3 / 9.5)
    # time a workload leaves unused goes to the next ones
    assert budget.workload_share(300.0, ["kl", "mta"]) == pytest.approx(300 * 2 / 3.5)
    assert budget.workload_share(-1.0, ["kl"]) == 0.0 and budget.workload_share(5.0, []) == 0.0


def test_plan_reps():
    assert budget.plan_reps(10.0, 0.001, 100) == 100                # cheap: capped
    assert budget.plan_reps(1.0, 0.05, 100) == 20                   # fits the slot
    assert budget.plan_reps(0.01, 1.0, 100) == budget.MIN_REPS      # never fewer
    assert budget.plan_reps(1.0, 0.0, 30) == 30


def test_prediction_and_skip():
    assert budget.predict_call_s(None, 1e9) is None
    assert budget.predict_call_s((0.01, 1e9), 4e9) == pytest.approx(0.04)
    assert budget.predict_call_s((0.01, 1e9), 1e8) == pytest.approx(0.01)   # never faster
    calls = {"tessel": 0.5, "peer": 0.1, "new": None}
    cost = budget.min_config_cost_s(calls)
    assert cost == pytest.approx(budget.SETUP_S + (budget.MIN_REPS + budget.EXTRA_CALLS) * 0.6)
    assert budget.min_config_cost_s({"a": None}) == budget.SETUP_S
    assert "6.5 s" in budget.skip_note(6.5, 3.0) and "3.0 s left" in budget.skip_note(6.5, 3.0)


def test_clock_and_hang_limit():
    now = [100.0]
    clock = budget.Clock.after(50.0, now=lambda: now[0])
    assert clock.left() == 50.0 and clock.config_slot(5) == 10.0
    now[0] = 140.0
    assert clock.left() == 10.0 and clock.config_slot(0) == 10.0
    now[0] = 200.0
    assert clock.left() == 0.0
    assert budget.hang_limit(None, 1.0, 100.0) == (budget.HANG_S, False)
    assert budget.hang_limit(20.0, 1.0, 500.0) == (80.0, False)
    assert budget.hang_limit(None, 60.0, 500.0) == (120.0, False)   # repetitions fill the slot
    assert budget.hang_limit(20.0, 1.0, 10.0) == (15.0, True)       # 80 s wanted, 15 s left


def test_watchdog_tells_a_hang_from_the_deadline():
    dog = bench_worker.Watchdog(events=None)
    dog.arm("a", 10.0)
    assert dog.expired(time.monotonic()) is None
    assert dog.expired(time.monotonic() + 11.0) == ("a", "crashed", "hung: no result after 10 s")
    dog.arm("b", 15.0, out_of_time=True)
    assert dog.expired(time.monotonic() + 16.0) == (
        "b", "skipped", "not finished when the time budget ran out, after 15 s (slow or hung)")
    dog.disarm()
    assert dog.expired(time.monotonic() + 100.0) is None


# ---------------------------------------------------------------------------------------------
# reports

def _document():
    doc = report.new_document({"device": "NVIDIA H100 80GB HBM3", "date": "2026-11-22",
                               "command": "bench/run.py", "torch": "2.11", "cuda": "13.0",
                               "cudnn": 91000, "tessel": "0.1", "dtype": "bf16", "seed": 0,
                               "budget_s": 420, "elapsed_s": 400.0, "notes": ["a note"]})
    doc["ceilings"] = {"copy_gbps": 3000.0, "matmul_tflops": 800.0,
                       "matmul_shape": [8192, 8192, 8192]}
    rows = {
        "N1024-D64-full": {"status": "done", "note": "", "results": {
            "tessel": {"status": "FAIL", "ms": 0.5, "err": 0.05, "limit": 0.02,
                       "wall_ms": 2.5},
            "sdpa-flash": {"status": "ok", "ms": 0.25, "err": 0.004, "limit": 0.02},
            "sdpa-cudnn": {"status": "error", "note": "RuntimeError: No | available kernel"}}},
        "N4096-D64-full": {"status": "skipped", "note": "skipped: time budget", "results": {}},
    }
    doc["workloads"]["prefill"] = {"rows": report.workload_rows(prefill, False, rows,
                                                                "not run: time budget spent")}
    kl_rows = {"N2048-fwd": {"status": "done", "note": "", "results": {
        "tessel": {"status": "ok", "ms": 1.0, "err": 1e-3, "limit": 0.02, "mem_bytes": 12e6},
        "torch": {"status": "OOM"}}}}
    doc["workloads"]["kl"] = {"rows": report.workload_rows(kl, False, kl_rows, "not run")}
    return doc


def test_markdown_tables():
    md = report.markdown(_document(), WORKLOADS)
    assert md.startswith("# Tessel benchmarks: NVIDIA H100 80GB HBM3, 2026-11-22")
    assert "device-to-device copy 3000 GB/s" in md and "8192×8192×8192 800 TFLOP/s" in md
    assert "## Conventions" in md and "causal counts half" in md
    lines = md.splitlines()
    head = next(line for line in lines if line.startswith("| N | D | causal |"))
    assert head.count("|") == len(prefill.COLUMNS) + len(prefill.IMPLS) + \
        len(prefill.RATIOS) + 3
    row = next(line for line in lines if line.startswith("| 1024 | 64 | False |"))
    assert len(re.findall(r"(?<!\\)\|", row)) == head.count("|")   # escaped pipes stay in cells
    # 4.3e9 FLOPs... 8.59e9 in 0.5 ms = 17.2 TFLOP/s = 2% of 800
    assert "**FAIL** 0.5 ms · 17.2 TFLOP/s (2%)" in row
    assert "0.50× (FAIL)" in row                   # flash 0.25 ms / Tessel 0.5 ms
    assert "error: RuntimeError: No \\| available kernel" in row
    assert "5.0e-02 / 4.0e-03 / — (≤ 2e-02)" in row
    assert "Tessel: wall 2.5 ms/call" in row
    assert "| 4096 | 64 | False | skipped |" in md
    assert md.count("not run: time budget spent") == len(prefill.configs()) - 2
    kl_row = next(line for line in lines if line.startswith("| 2048 | fwd |"))
    assert "+12 MB" in kl_row and "| OOM |" in kl_row and "| — |" in kl_row


def test_write_strict_json(tmp_path):
    doc = _document()
    doc["workloads"]["prefill"]["rows"][0]["results"]["tessel"]["err"] = math.inf
    paths = report.write(doc, WORKLOADS, str(tmp_path), "stem")
    assert [os.path.basename(p) for p in paths] == ["stem.json", "stem.md"]
    loaded = json.loads(open(paths[0]).read(), parse_constant=lambda c: pytest.fail(c))
    assert loaded["workloads"]["prefill"]["rows"][0]["results"]["tessel"]["err"] is None
    assert loaded["ceilings"]["copy_gbps"] == 3000.0
    assert "inf" in open(paths[1]).read()


def test_plot_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # import raises ImportError
    doc = _document()
    report.plot(doc, WORKLOADS, str(tmp_path), "stem")
    assert doc["plots"] == [] and doc["plot_note"] == "matplotlib is not installed: no plots"
    assert "matplotlib is not installed" in report.markdown(doc, WORKLOADS)


def test_points():
    rows = [{"config": {"Nk": n, "series": s}, "v": v}
            for n, s, v in ((2, "a", 1.0), (1, "a", 2.0), (1, "b", 3.0), (3, "a", None))]
    assert report.points(rows, "Nk", lambda r: r["v"], series="a") == [(1, 2.0), (2, 1.0)]


def test_formatting():
    assert report.fmt_ms(12.3456) == "12.3 ms" and report.fmt_ms(0.0175) == "17.5 µs"
    assert report.fmt_bytes(4.29e9) == "4.29 GB" and report.fmt_bytes(512) == "512 B"
    assert report.fmt_rate(123.4) == "123" and report.fmt_rate(12.34) == "12.3"
    assert report.wall_flag({"ms": 1.0, "wall_ms": 2.4}) is None        # launch overhead
    assert report.wall_flag({"ms": 0.01, "wall_ms": 0.4}) is None
    assert report.wall_flag({"ms": 0.01, "wall_ms": 3.0}) == "wall 3 ms/call"
    assert report.wall_flag({"ms": 1.0, "wall_ms": 2.6}) == "wall 2.6 ms/call"
    assert report.spread_flag({"ms": 0.912, "min_ms": 0.599}) == "fastest call 0.599 ms"
    assert report.spread_flag({"ms": 0.645, "min_ms": 0.64}) is None
    assert report.spread_flag({"ms": 1.0}) is None


# ---------------------------------------------------------------------------------------------
# bench/run.py with a fake worker

FAKE_WORKER = textwrap.dedent("""
    import argparse, json, os, sys, time
    sys.path.insert(0, {root!r})
    from bench.workloads import WORKLOADS
    p = argparse.ArgumentParser()
    for flag in ("--workload", "--seconds", "--events", "--skip"):
        p.add_argument(flag, default="")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    events = open(args.events, "a")
    def emit(**record):
        events.write(json.dumps(record) + "\\n")
        events.flush()
    if os.environ.get("FAKE_SCENARIO") == "fatal":
        emit(event="fatal", error="RuntimeError: torch sees no CUDA device")
        sys.exit(2)
    emit(event="meta", device="Fake GPU 80GB", torch="0", cuda="0", cudnn=0, tessel="0",
         tessel_error=None, memory_bytes=80 << 30)
    if args.workload == "ceilings":
        emit(event="ceilings", copy_gbps=3000.0, matmul_tflops=800.0,
             matmul_shape=[8192, 8192, 8192])
        sys.exit(0)
    scenario = os.environ.get("FAKE_SCENARIO", "ok")
    skip = set(filter(None, args.skip.split(",")))
    module = WORKLOADS[args.workload]
    todo = [c for c in module.configs(args.quick) if c["id"] not in skip]
    for i, cfg in enumerate(todo):
        if scenario == "leak" and not skip and i == 1:
            sys.exit(5)
        emit(event="start", id=cfg["id"])
        if scenario == "crash" and not skip and i == 1:
            print("Fatal: illegal memory access", file=sys.stderr)
            sys.exit(3)
        if scenario == "hang" and i == 0:
            time.sleep(60)
        results = {{impl: {{"status": "ok", "ms": 1.0 + j, "err": 1e-3, "limit": 2e-2}}
                   for j, (impl, _) in enumerate(module.IMPLS)}}
        emit(event="row", id=cfg["id"], status="done", note="", results=results)
""")


@pytest.fixture
def fake_worker(tmp_path, monkeypatch):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER.format(root=ROOT))

    def command(args, workload, seconds, events, skip, history=None):
        histories.append(history)
        return [sys.executable, str(script), "--workload", workload, "--seconds",
                str(seconds), "--events", events, "--skip", ",".join(sorted(skip))] + \
            (["--quick"] if args.quick else [])
    histories = []
    monkeypatch.setattr(bench_run, "worker_command", command)
    monkeypatch.histories = histories
    return monkeypatch


def test_collect():
    state = bench_run.collect([
        {"event": "meta", "device": "X"}, {"event": "start", "id": "a"},
        {"event": "row", "id": "a", "status": "done", "results": {}},
        {"event": "start", "id": "b"}])
    assert state["meta"] == {"device": "X"} and list(state["rows"]) == ["a"]
    assert state["in_progress"] == "b" and state["fatal"] is None
    assert bench_run.collect([{"event": "fatal", "error": "no GPU"}])["fatal"] == "no GPU"


def test_read_events_drops_a_torn_line(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "start", "id": "a"}\n{"event": "row", "id"')
    assert bench_run.read_events(str(path)) == [{"event": "start", "id": "a"}]
    assert bench_run.read_events(str(tmp_path / "missing")) == []


def _run_workload(tmp_path, name, seconds=30.0):
    args = bench_run.parse_args(["--quick", "--workloads", name])
    doc, rows = report.new_document({"notes": []}), {}
    bench_run.run_workload(args, name, seconds, str(tmp_path), doc, rows)
    return doc, rows


def test_a_crashed_configuration_is_recorded_and_the_workload_goes_on(tmp_path, fake_worker):
    fake_worker.setenv("FAKE_SCENARIO", "crash")
    doc, rows = _run_workload(tmp_path, "decode")
    first, second = (c["id"] for c in decode.configs(True))
    assert rows[first]["status"] == "done"
    assert rows[second]["status"] == "crashed"
    assert rows[second]["note"] == ("crashed: worker exited with code 3 "
                                    "(Fatal: illegal memory access)")
    assert doc["meta"]["device"] == "Fake GPU 80GB"


def test_a_replacement_worker_predicts_from_the_timings_so_far(tmp_path, fake_worker):
    # The first worker times the first configuration (ms 1, 2, ... per implementation) and
    # crashes on the second; its replacement starts from those timings.
    fake_worker.setenv("FAKE_SCENARIO", "crash")
    _run_workload(tmp_path, "prefill")
    first = prefill.configs(True)[0]
    work = prefill.work(first)
    assert fake_worker.histories[0] == {}
    assert fake_worker.histories[1] == {impl: ((1.0 + j) / 1e3, work)
                                        for j, (impl, _) in enumerate(prefill.IMPLS)}


def test_worker_command_passes_the_history():
    args = argparse.Namespace(dtype="bf16", seed=0, quick=False)
    cmd = bench_run.worker_command(args, "kl", 10.0, "e.jsonl", {"a"}, {"tessel": (0.5, 8.0)})
    assert json.loads(cmd[cmd.index("--history") + 1]) == {"tessel": [0.5, 8.0]}
    assert "--history" not in bench_run.worker_command(args, "kl", 10.0, "e.jsonl", set(), {})


def test_a_worker_that_leaks_memory_is_replaced(tmp_path, fake_worker):
    fake_worker.setenv("FAKE_SCENARIO", "leak")
    fake_worker.setattr(bench_run, "MAX_RESTARTS", 0)      # not a crash: no restart counted
    _, rows = _run_workload(tmp_path, "prefill")
    assert {i: r["status"] for i, r in rows.items()} == {c["id"]: "done"
                                                         for c in prefill.configs(True)}
    assert len(list(tmp_path.glob("prefill-*.jsonl"))) == 2


def test_a_hung_worker_is_killed(tmp_path, fake_worker):
    fake_worker.setenv("FAKE_SCENARIO", "hang")
    fake_worker.setattr(budget, "GRACE_S", 0.5)
    _, rows = _run_workload(tmp_path, "kl", seconds=1.0)
    first = kl.configs(True)[0]["id"]
    assert rows == {first: {"status": "crashed", "results": {}, "note": bench_run.crash_note(
        -9, True, [])}}


def test_a_fatal_worker_accounts_for_every_configuration(tmp_path, fake_worker):
    fake_worker.setenv("FAKE_SCENARIO", "fatal")
    doc, rows = _run_workload(tmp_path, "mta")
    note = "not run: RuntimeError: torch sees no CUDA device"
    assert rows == {c["id"]: {"status": "not run", "results": {}, "note": note}
                    for c in mta.configs(True)}
    assert doc["meta"]["notes"] == ["mta: RuntimeError: torch sees no CUDA device"]


def test_run_end_to_end(tmp_path, fake_worker, capsys):
    assert bench_run.main(["--quick", "--budget-s", "100", "--out-dir", str(tmp_path)]) == 0
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    stem = tmp_path / f"fake-gpu-80gb-{date}"
    doc = json.loads(open(f"{stem}.json").read())
    assert list(doc["workloads"]) == list(WORKLOADS)
    for name, entry in doc["workloads"].items():
        assert [r["status"] for r in entry["rows"]] == ["done"] * len(WORKLOADS[name].configs(True))
    md = open(f"{stem}.md").read()
    assert md == report.markdown(doc, WORKLOADS)
    assert "| 1024 | 128 | False | 1 ms" in md and "2.00×" in md
    # MTA's rows, decode included: 1 ms for 2·16·4096·(7·64 + 66) FLOPs = 0.0674 TFLOP/s
    mta_rows = [r["id"] for r in doc["workloads"]["mta"]["rows"]]
    assert mta_rows == ["N1024-fwd", "N1024-fwdbwd", "N4096-decode"]
    assert ("| 4096 | decode | 1 ms · 0.1 TFLOP/s (0%) | 2 ms · 0.0 TFLOP/s (0%) | "
            "3 ms · 0.0 TFLOP/s (0%) | 2.00× | 3.00× |") in md
    assert doc["plots"] or doc["plot_note"] == "matplotlib is not installed: no plots"
    for png in doc["plots"]:
        assert (tmp_path / png).stat().st_size > 0
    assert "written: " in capsys.readouterr().out


def test_unknown_workload_is_an_error():
    with pytest.raises(SystemExit):
        bench_run.parse_args(["--workloads", "prefill,nope"])


def test_an_out_of_memory_configuration_ends_the_worker():
    from bench.worker import had_oom
    assert had_oom({"status": "OOM", "results": {}})
    assert had_oom({"status": "done", "results": {"tessel": {"status": "ok"},
                                                  "torch": {"status": "OOM"}}})
    assert not had_oom({"status": "done", "results": {"tessel": {"status": "ok"}}})
    assert not had_oom({"status": "error", "results": {}})


def test_paged_rows():
    """Paged decode: the ragged lengths spread over [Nk/8, Nk]; every page size divides every
    context; the work is the bytes of K and V the sequences hold."""
    from bench.workloads import paged
    assert paged.lengths(8, 8192) == [8192, 7168, 6144, 5120, 4096, 3072, 2048, 1024]
    for cfg in paged.configs():
        assert all(cfg["Nk"] % p == 0 for p in paged.PAGE_SIZES)
        assert paged.work(cfg) == 2 * sum(cfg["lens"]) * cfg["HKV"] * 128 * 2
        assert max(cfg["lens"]) == cfg["Nk"] and min(cfg["lens"]) >= cfg["Nk"] // 8
