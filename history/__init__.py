"""The history: the durable event record every stage writes or reads.

`records` reads and verifies `history.jsonl` (pure), `model` turns events into
fits, attempts and recoveries (pure), `book` is the book that writes it (pure:
the Ray actor that serves it and the emitters that feed it are
ftharness.harness.cluster.history_service), `triggers` fire faults on the exact
event. Nothing here imports Ray (tests/test_layout.py checks it).
"""
