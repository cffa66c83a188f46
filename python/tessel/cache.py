"""The on-disk cache of compiled kernels.

An entry is the lowered tessel IR of one kernel (text, with its .tsl locations, so interpreter
errors still point at the source), keyed by the SHA-256 of everything that determines it: the
source text and file name, the kernel, its constants, the stage and target, and the compiler (the
package version, a hash of the extension and the compiler library's GNU build ID, so a rebuilt
compiler never reads entries of an older one). A second process compiling the same kernel parses
the IR instead of running the front end.

Directory: $TESSEL_CACHE_DIR, else $XDG_CACHE_HOME/tessel, else ~/.cache/tessel; one file per entry,
`<kernel>-<key>.mlir`. Entries are written to a temporary file and renamed into place, so readers
never see a partial entry; each carries a checksum of its body, and an entry that fails it (or does
not parse) is ignored and rewritten. Deleting the directory is always safe. Failing to write the
cache (read-only home, full disk) is not an error: the kernel is just compiled again next time.
GPU kernels are cached the same way as their bundle (`<kernel>-<key>.bundle`, target in the key).

Bundle directories (`$TESSEL_BUNDLE_DIR`) carry precompiled kernels to machines whose package has
no compiler (a runtime-only build: no LLVM/MLIR there). Their files are plain bundles, loadable by
any tool, named by a PORTABLE key: the source text, the kernel, its constants, the target and the
package version, but not the compiler binary or the file's directory, so the same kernel of the
same package finds its bundle on another machine. `python -m tessel.precompile` writes them.
"""

import hashlib
import json
import os
import tempfile

from ._backend import _tessel

# Bumped when the entry layout or the key's fields change.
FORMAT = 1
_HEADER = f"// tessel-cache {FORMAT} sha256="

_compiler_id = None


def cache_dir():
    path = os.environ.get("TESSEL_CACHE_DIR")
    if path:
        return path
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tessel")


def compiler_id():
    """The package version and the SHA-256 of the extension and of the compiler library it
    opened (the library's GNU build ID when it has one, which is a hash of it already: reading
    a compiler with LLVM inside would cost tens of milliseconds). Computed once per process."""
    global _compiler_id
    if _compiler_id is None:
        digest = hashlib.sha256()
        _hash_file(digest, _tessel.__file__)
        if _tessel.has_compiler and _tessel.compiler_build_id:
            digest.update(_tessel.compiler_build_id.encode())
        elif _tessel.has_compiler:
            _hash_file(digest, _tessel.compiler_library)
        _compiler_id = f"{_tessel.version}+{digest.hexdigest()}"
    return _compiler_id


def _hash_file(digest, path):
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)


def key(**fields):
    """The hex SHA-256 of `fields` (JSON-serialisable) and of the compiler."""
    fields = dict(fields, format=FORMAT, compiler=compiler_id())
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def portable_key(**fields):
    """The hex SHA-256 of `fields` and of the package version (a bundle directory's key)."""
    fields = dict(fields, format=FORMAT, version=_tessel.version)
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def entry_path(kernel, entry_key, suffix=".mlir", directory=None):
    return os.path.join(directory or cache_dir(), f"{kernel}-{entry_key}{suffix}")


def bundle_dir():
    """$TESSEL_BUNDLE_DIR, or None."""
    return os.environ.get("TESSEL_BUNDLE_DIR") or None


def _digest(body):
    return hashlib.sha256(body.encode()).hexdigest()


def load(path, checksum=True):
    """The entry's text, or None if there is none or it is damaged. checksum=False reads a plain
    file (a bundle directory's; the runtime's strict reader checks those)."""
    try:
        with open(path, encoding="utf-8") as f:
            header = f.readline() if checksum else ""
            body = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    if checksum and header.rstrip("\n") != _HEADER + _digest(body):
        return None
    return body


def store(path, body, checksum=True, strict=False):
    """Writes an entry atomically (temporary file + rename), with a checksum header line unless
    checksum=False. Errors are ignored (a cache), or raised with strict=True (an export)."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                if checksum:
                    f.write(_HEADER + _digest(body) + "\n")
                f.write(body)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        if strict:
            raise
