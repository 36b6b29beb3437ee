"""asv benchmarks of the memwire kernel, on both backends (see asv_bench/README.md)."""
