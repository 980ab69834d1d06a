"""The layers of the package, lowest first: the one table that tests/test_layering.py enforces, docs/architecture.md
explains and scripts/architecture_figure.py draws.

A module may import its own package and any package of a LOWER layer, never one of its own layer or above, so data
flows one way and packages of one layer stay independent of each other.

>>> LAYER["schema"] < LAYER["programs"] < LAYER["pipeline"] < LAYER["evals"]
True
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    ("schema", "textio", "config", "runtime", "metrics", "atomic", "untrusted", "layers",
     "secrets"),  # foundation helpers
    ("matching",),  # text similarity, paragraph and sentence splitting, the claim matcher (pure)
    ("tracking", "models", "retrieval", "rules", "data",  # stores, models stages run on, evidence, label policy, data,
     "knowledge"),  # reference libraries (read-only) and factlab's notes on them
    ("programs", "cards", "judge"),  # the stage programs (pure DSPy); the verify cards; the shipped judge and heads
    ("stages",),  # building a stage from config
    ("pipeline", "agents"),  # what the checkers share (trace, meter, claim cache); the multi-round search agents
    ("checkers",),  # every checker and its parts (fast, professional, funnel, nearline), built from `checker=<name>`
    ("optimize", "train", "evals"),  # the workbench jobs
    ("review", "loop"),  # the review app: a person's decisions on the cards, and what they train; the workbench loop
    ("cli",),  # the command line
)
LAYER: dict[str, int] = {name: rank for rank, names in enumerate(LAYERS) for name in names}
