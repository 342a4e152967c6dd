"""The native runtime: ringleader's own in-process agent loop (Glove's model, on trio)."""
