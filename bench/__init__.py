"""Tessel's benchmarks against its peers; bench/run.py is the entry point (see bench/README.md)."""
