"""Benchmarks (filled in by the benchmarks issue)."""
