#!/usr/bin/env python3
"""Compiles the smoke-test kernels to PTX with nvcc and writes their bundles.

Run from anywhere: python3 make_bundles.py [path/to/nvcc]. The bundles are
checked in, so tests do not need nvcc; rerun this after editing a .cu file.
"""
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
NVCC = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/cuda/bin/nvcc"

KERNELS = {
    "vector_add": {
        "name": "vector_add",
        "ptx_entry": "vector_add",
        "num_warps": 8,
        "shared_bytes": 0,
        "params": [
            {"name": "x", "kind": "ptr", "elem": "f32"},
            {"name": "y", "kind": "ptr", "elem": "f32"},
            {"name": "out", "kind": "ptr", "elem": "f32"},
            {"name": "n", "kind": "i32"},
        ],
        "constants": {"BLOCK": 256},
        "launch": {"kind": "grid", "grid": ["cdiv(n, BLOCK)"]},
    },
    "persistent_sum": {
        "name": "persistent_sum",
        "ptx_entry": "persistent_sum",
        "num_warps": 8,
        "shared_bytes": 65536,
        "params": [
            {"name": "x", "kind": "ptr", "elem": "f32"},
            {"name": "out", "kind": "ptr", "elem": "f32"},
            {"name": "n", "kind": "i32"},
        ],
        "constants": {"ELEMS_PER_CTA": 1024},
        "launch": {
            "kind": "persistent",
            "max_ctas": "cdiv(n, ELEMS_PER_CTA)",
            "workspace_bytes": "16 + 4 * num_ctas",
        },
    },
}


def main():
    for name, kernel in KERNELS.items():
        ptx = subprocess.run(
            [NVCC, "-arch=sm_90", "-ptx", "-o", "-", str(HERE / f"{name}.cu")],
            check=True, capture_output=True, text=True).stdout
        bundle = {
            "format": "tessel-bundle",
            "version": 1,
            "target": "sm_90",
            "producer": f"make_bundles.py (nvcc -arch=sm_90 -ptx {name}.cu)",
            "kernels": [kernel],
            "ptx": ptx,
        }
        path = HERE / f"{name}.bundle"
        path.write_text(json.dumps(bundle, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
