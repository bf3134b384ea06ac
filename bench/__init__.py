"""Benchmarks for harness-sidecar: ``python -m bench`` from the repository root."""
