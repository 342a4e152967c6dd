"""ringleader's benchmarks: ``python -m bench`` measures every hot path against its limit and its
best peer in one run and prints one table (see ``bench/__main__.py``)."""
