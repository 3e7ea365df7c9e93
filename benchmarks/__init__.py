"""Throughput and time-to-solve benchmarks; see ``python -m benchmarks.run --help``."""
