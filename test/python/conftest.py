"""Test setup: import `tessel` from the build tree and keep its cache out of the home directory.

    TESSEL_BUILD_DIR=build /usr/bin/python3 -m pytest test/python

The package is $TESSEL_BUILD_DIR/python/tessel (default <repo>/build), built by the TesselPython
target of a build configured with -DTESSEL_ENABLE_PYTHON=ON.
"""

import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD_DIR = os.path.abspath(os.environ.get("TESSEL_BUILD_DIR") or os.path.join(ROOT, "build"))
PYTHON_DIR = os.path.join(BUILD_DIR, "python")
if not os.path.isdir(os.path.join(PYTHON_DIR, "tessel")):
    raise RuntimeError(f"no Python package at {PYTHON_DIR}/tessel: configure the build with "
                       f"-DTESSEL_ENABLE_PYTHON=ON and build the TesselPython target")
sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, os.path.join(ROOT, "test", "numerics"))  # reference.py


@pytest.fixture(scope="session", autouse=True)
def _environment(tmp_path_factory):
    """One fresh cache for the session (kernels compiled by one test are reused by the next), and
    no TESSEL_INTERPRET from the caller's environment."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TESSEL_CACHE_DIR", str(tmp_path_factory.mktemp("tessel-cache")))
        mp.delenv("TESSEL_INTERPRET", raising=False)
        yield
