"""Builds the `tessel` package with the project's CMake build: `pip install python/`.

The pure-Python files come from python/tessel; the extension tessel._tessel and the kernels
(package data) come from the CMake target TesselPython, which needs what the C++ build needs
(CMake, a C++17 compiler, LLVM/MLIR 22 for the compiler, pybind11). Environment:

    TESSEL_BUILD_DIR=DIR     reuse a build directory configured with -DTESSEL_ENABLE_PYTHON=ON (for
                             this Python's version); only the TesselPython target is built in it
    TESSEL_CMAKE_ARGS=...    extra configure arguments for a fresh build, e.g.
                             "-G Ninja -DTESSEL_ENABLE_COMPILER=OFF" (a runtime-only package)
    TESSEL_PACKAGE_COMPILER_LIBRARY=FILE
                             the compiler library (libtessel_compiler.so) to put in the package
                             instead of the build's own: one built elsewhere with
                             -DTESSEL_LINK_LLVM_STATIC=ON serves a package whose extension was
                             built without LLVM (scripts/wheel.sh)

Without TESSEL_BUILD_DIR the build directory is under setuptools' build/ (kept between in-tree
builds, so reinstalling is incremental).
"""

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(tessel\b[^)]*\bVERSION\s+([0-9.]+)", f.read()).group(1)


class BuildWithCMake(build_py):
    """build_py, plus the extension and the kernels from the CMake build."""

    def run(self):
        super().run()
        build_dir = os.environ.get("TESSEL_BUILD_DIR")
        if not build_dir:
            build_dir = os.path.join(self.get_finalized_command("build").build_temp, "cmake")
            configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DTESSEL_ENABLE_PYTHON=ON",
                         f"-DPython_EXECUTABLE={sys.executable}"]
            try:
                import pybind11
                configure.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
            except ImportError:
                pass  # CMake looks for a system pybind11
            subprocess.check_call(configure + shlex.split(os.environ.get("TESSEL_CMAKE_ARGS", "")))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "TesselPython"])
        built = os.path.join(build_dir, "python", "tessel")
        package = os.path.join(self.build_lib, "tessel")
        for extension in glob.glob(os.path.join(built, "_tessel*.so")):
            shutil.copy2(extension, package)
        library = os.environ.get("TESSEL_PACKAGE_COMPILER_LIBRARY")
        if library and not os.path.isfile(library):
            raise SystemExit(f"TESSEL_PACKAGE_COMPILER_LIBRARY={library}: no such file")
        library = library or os.path.join(built, "libtessel_compiler.so")
        if os.path.exists(library):
            shutil.copy2(library, os.path.join(package, "libtessel_compiler.so"))
        shutil.copytree(os.path.join(built, "kernels"), os.path.join(package, "kernels"),
                        dirs_exist_ok=True)


class BinaryDistribution(Distribution):
    """A platform wheel: the package holds a compiled extension."""

    def has_ext_modules(self):
        return True


setup(version=version(), packages=["tessel", "tessel.ops"], distclass=BinaryDistribution,
      cmdclass={"build_py": BuildWithCMake})
