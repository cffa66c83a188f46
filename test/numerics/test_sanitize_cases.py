"""The compute-sanitizer runs of scripts/gpu/sanitize.py, checked on the CPU interpreter: one line per
kernel of kernels/, each of which runs (so its sizes and strides fit its kernel), a control that does
not, the options the GPU gets and the parsing of compute-sanitizer's summaries."""

import glob
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "gpu"))
import sanitize  # noqa: E402
import tessel_run as tr  # noqa: E402

CASES = sanitize.read_cases()


def interpret(case):
    cmd = [tr.binary(), os.path.join(tr.KERNELS_DIR, case.tsl)] + case.options
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_every_kernel_has_a_case():
    kernels = set()
    for path in glob.glob(os.path.join(tr.KERNELS_DIR, "*.tsl")):
        text = open(path).read()
        kernels |= {(os.path.basename(path), k)
                    for k in re.findall(r"^@kernel\b(?:.*\n)*?def (\w+)", text, re.M)}
    cases = [(c.tsl, c.kernel) for c in CASES]
    assert sorted(set(cases)) == sorted(kernels)   # at least one case each, nothing else
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_runs_on_the_interpreter(case):
    proc = interpret(case)
    assert proc.returncode == 0, proc.stderr
    assert f"kernel '{case.kernel}' ran on the CPU interpreter" in proc.stdout


def test_control_is_out_of_bounds():
    probe = sanitize.control(CASES[0])
    assert probe.options != CASES[0].options
    proc = interpret(probe)
    assert proc.returncode == 1 and "out-of-bounds" in proc.stderr, proc.stderr


def test_bundle_options_leave_out_the_defines():
    case = sanitize.Case("k", "k.tsl", ["--kernel", "k", "-D", "D=64", "--grid", "2",
                                        "-D", "CAUSAL=True", "--arg", "n=3"])
    assert case.defines == ["D=64", "CAUSAL=True"]
    assert case.bundle_options() == ["--kernel", "k", "--grid", "2", "--arg", "n=3"]


def test_case_file_format(tmp_path):
    path = tmp_path / "cases.txt"
    path.write_text("# comment\na a.tsl --kernel a \\\n    --grid 2  # two programs\n\n")
    [case] = sanitize.read_cases(str(path))
    assert (case.name, case.tsl, case.options) == ("a", "a.tsl", ["--kernel", "a", "--grid", "2"])
    path.write_text("a a.tsl --grid 2\n")
    with pytest.raises(ValueError, match="expected NAME FILE.tsl --kernel"):
        sanitize.read_cases(str(path))


def test_sanitizer_summaries():
    # As compute-sanitizer 2025.3 prints them.
    assert sanitize.count_errors("========= COMPUTE-SANITIZER\nkernel 'k' ran on the GPU\n"
                                 "========= ERROR SUMMARY: 0 errors\n") == (0, 0)
    assert sanitize.count_errors("========= ERROR SUMMARY: 41 errors\n========= ERROR SUMMARY: 21 "
                                 "errors were not printed. Use --print-limit option to adjust the "
                                 "number of printed errors\n") == (41, 0)
    assert sanitize.count_errors("========= ERROR SUMMARY: 1 error\n") == (1, 0)
    assert sanitize.count_errors("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 "
                                 "warnings)\n") == (0, 0)
    assert sanitize.count_errors("========= RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 "
                                 "warnings)\n") == (1, 2)
    assert sanitize.count_errors("tessel-run: error: no CUDA device\n") is None
