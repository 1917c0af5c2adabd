"""The history: the durable event record every stage writes or reads.

`records` reads and verifies `history.jsonl` (pure), `model` turns events into
fits, attempts and recoveries (pure), `store` is the actor that writes it and
the emitters that feed it, `triggers` fire faults on the exact event.
"""
