"""The on-disk cache: a second process skips the front end, damaged entries are ignored and
rebuilt, keys separate specialisations, and the cache never makes a compile fail."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernels_for_tests as kt
import tessel
from tessel import cache

# Compiles the add kernel, runs it and prints whether the compile was a cache hit.
CHILD = textwrap.dedent("""\
    import sys
    import numpy as np
    import tessel
    k = tessel.compile(sys.argv[1], constants={"BLOCK": 16})
    x = np.arange(40, dtype=np.float32)
    out = np.zeros(40, np.float32)
    k[(3,)](x, x, out, 40)
    assert (out == 2 * x).all()
    print("hit" if k.cache_hit else "miss")
""")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(path))
    return path


@pytest.fixture
def add_path(tmp_path):
    path = tmp_path / "add.tsl"
    path.write_text(kt.ADD)
    return str(path)


def _entries(directory):
    return sorted(p for p in directory.iterdir()) if directory.exists() else []


def test_second_process_hits(cache_dir, add_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tessel.__file__)))
    runs = [subprocess.run([sys.executable, "-c", CHILD, add_path], env=env, capture_output=True,
                           text=True, timeout=60) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert [run.stdout.strip() for run in runs] == ["miss", "hit"]
    (entry,) = _entries(cache_dir)
    assert entry.name.startswith("add-") and entry.suffix == ".mlir"


def test_keys_separate_specialisations_and_sources(cache_dir, add_path):
    assert not tessel.compile(add_path, constants={"BLOCK": 16}).cache_hit
    assert not tessel.compile(add_path, constants={"BLOCK": 32}).cache_hit
    assert not tessel.compile(kt.ADD, constants={"BLOCK": 16}).cache_hit  # another file name
    changed = kt.ADD.replace("other=0.0) + load", "other=0.0) - load")
    assert not tessel.compile(changed, constants={"BLOCK": 16}).cache_hit
    assert tessel.compile(add_path, constants={"BLOCK": 32}).cache_hit
    assert len(_entries(cache_dir)) == 4


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "bad IR, good checksum"])
def test_damaged_entry_is_ignored_and_rebuilt(cache_dir, add_path, damage):
    k = tessel.compile(add_path, constants={"BLOCK": 16})
    assert not k.cache_hit
    (entry,) = _entries(cache_dir)
    text = entry.read_text()
    if damage == "garbage":
        entry.write_bytes(b"\xff\xfe not a cache entry")
    elif damage == "truncated":
        entry.write_text(text[: len(text) // 2])
    elif damage == "empty":
        entry.write_text("")
    else:
        cache.store(str(entry), "func.func @add(")
    again = tessel.compile(add_path, constants={"BLOCK": 16})
    assert not again.cache_hit
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    again[1](x, x, out, 16)
    np.testing.assert_array_equal(out, 2 * x)
    assert entry.read_text() == text  # rewritten
    assert tessel.compile(add_path, constants={"BLOCK": 16}).cache_hit


def test_unwritable_cache_is_not_an_error(tmp_path, monkeypatch, add_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(blocker / "cache"))  # under a regular file
    for _ in range(2):
        assert not tessel.compile(add_path, constants={"BLOCK": 16}).cache_hit


def test_store_is_atomic(cache_dir):
    path = str(cache_dir / "k-0.mlir")
    cache.store(path, "body")
    cache.store(path, "new body")
    assert cache.load(path) == "new body"
    assert [p.name for p in _entries(cache_dir)] == ["k-0.mlir"]  # no temporary files left


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSEL_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == str(tmp_path / "a")
    monkeypatch.delenv("TESSEL_CACHE_DIR")
    assert cache.cache_dir() == str(tmp_path / "xdg" / "tessel")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == str(tmp_path / "home" / ".cache" / "tessel")


def test_compiler_id_follows_the_compiler_library(monkeypatch):
    """The key names the compiler library by its GNU build ID (read by the library itself, equal
    to the linker's note), and a different library gives a different key."""
    build_id = tessel._tessel.compiler_build_id
    note = subprocess.run(["readelf", "-n", tessel._tessel.compiler_library], check=True,
                          capture_output=True, text=True).stdout
    assert build_id and f"Build ID: {build_id}" in note
    monkeypatch.setattr(cache, "_compiler_id", None)
    first = cache.compiler_id()
    monkeypatch.setattr(cache, "_compiler_id", None)
    monkeypatch.setattr(tessel._tessel, "compiler_build_id", "0" * 40)
    assert cache.compiler_id() != first
    monkeypatch.setattr(cache, "_compiler_id", None)
    monkeypatch.setattr(tessel._tessel, "compiler_build_id", "")   # no note: the file's hash
    assert cache.compiler_id() not in (first, None)
