"""Errors of the data layer: each names the file, the line (or item / row) and the field, then expected vs got."""

from __future__ import annotations


class DataError(ValueError):
    """Base class: something in a data file or a dataset config is wrong; the message says where and how to fix it."""


class CaseError(DataError):
    """A case, corpus or upstream row is malformed.

    Attributes:
        where: the file and position, e.g. ``datasets/bundled/cases_zh.jsonl line 3``.
        field: the field path inside the row, e.g. ``claims[2].relation`` (``(row)`` for the row as a whole).
        problem: what is wrong, as "expected X, got Y" where that applies.
    """

    def __init__(self, where: str, field: str, problem: str) -> None:
        self.where, self.field, self.problem = where, field, problem
        super().__init__(f"{where}: {field}: {problem}")


class DatasetConfigError(DataError):
    """A dataset config points at something missing or maps a label it does not know."""
