"""Helpers of benchmarks/anchors.py: one adapter per measured system (systems.py)."""
