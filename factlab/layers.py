"""The layers of the package, lowest first: the one table that tests/test_layering.py enforces, docs/architecture.md
explains and scripts/architecture_figure.py draws.

A module may import its own package and any package of a LOWER layer, never one of its own layer or above, so data
flows one way and packages of one layer stay independent of each other.

>>> LAYER["schema"] < LAYER["programs"] < LAYER["pipeline"] < LAYER["evals"]
True
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    ("schema", "textio", "config", "runtime", "metrics", "atomic", "untrusted", "layers"),  # foundation helpers
    ("matching",),  # text similarity and the claim matcher (pure)
    ("tracking", "models", "retrieval", "rules", "data"),  # stores, models stages run on, evidence, label policy, data
    ("programs", "cards"),  # the stage programs (pure DSPy) and the verify-card model
    ("stages", "report"),  # building a stage from config; rendering a report
    ("pipeline", "agents"),  # the LM pipeline (the professional checker) and the multi-round search agents
    ("checkers",),  # the Checker interface: fast, professional, funnel, nearline, built from `checker=<name>`
    ("optimize", "train", "evals"),  # the workbench jobs
    ("cli",),  # the command line
)
LAYER: dict[str, int] = {name: rank for rank, names in enumerate(LAYERS) for name in names}
