"""The C++ extension, imported with an explanation when it is missing."""

try:
    from . import _tessel  # noqa: F401  (re-exported)
except ImportError as error:
    raise ImportError(
        "tessel: the extension module tessel._tessel is missing or does not load "
        f"({error}). From a source tree: configure with -DTESSEL_ENABLE_PYTHON=ON, build the "
        "TesselPython target and put <build>/python on PYTHONPATH; or pip install python/ "
        "(see python/README.md).") from error
