"""What a review is of: a verify output folder (its cards.json) or an MLflow run of verify.py (its cards.json
artifact, downloaded once into a cache folder)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from factlab.cards.model import ClaimCard, ParagraphCard, Report, read_cards_json
from factlab.review.store import card_version


class ReviewRunError(ValueError):
    """`run=` names neither a verify output folder nor an MLflow run with cards.json."""


@dataclass
class ReviewTarget:
    key: str  # the run key decisions are stored under: "dir:<absolute folder>" or "mlflow:<run id>"
    folder: Path  # the folder holding cards.json (for an MLflow run: the downloaded copy)
    report: Report

    @functools.cached_property
    def _cards(self) -> dict[tuple[str, str], tuple[ParagraphCard, ClaimCard]]:
        return {(p.paragraph_id, c.claim_id): (p, c) for p, c in self.report.claims()
                if c.checkworthy and c.label is not None}

    @functools.cached_property
    def _versions(self) -> dict[str, str]:
        return {f"{p}/{c}": card_version(claim.to_dict()) for (p, c), (_, claim) in self._cards.items()}

    def cards(self) -> dict[tuple[str, str], tuple[ParagraphCard, ClaimCard]]:
        """(paragraph id, claim id) -> (paragraph, claim) for every claim that has a label to decide on (the report
        is read once: computed once)."""
        return dict(self._cards)

    def versions(self) -> dict[str, str]:
        """"<paragraph id>/<claim id>" -> the card's version, for every decidable card (hashed once per target,
        not per request)."""
        return dict(self._versions)


def resolve_run(run: str, tracking_uri: str, cache_dir: str | Path) -> ReviewTarget:
    """The review target named by `run`: a folder with cards.json, or an MLflow run id whose artifacts hold one.

    Raises:
        ReviewRunError: naming what was looked for and where.
    """
    folder = Path(run).expanduser()
    if folder.is_dir():
        cards = folder / "cards.json"
        if not cards.is_file():
            raise ReviewRunError(f"run={run}: the folder has no cards.json (a verify.py output_dir has one)")
        return ReviewTarget(f"dir:{folder.resolve()}", folder.resolve(), read_cards_json(cards))
    if folder.suffix or "/" in run:
        raise ReviewRunError(f"run={run}: no such folder (pass a verify.py output_dir or an MLflow run id)")
    import mlflow

    target = Path(cache_dir) / run
    cards = target / "cards.json"
    if not cards.is_file():
        client = mlflow.MlflowClient(tracking_uri=tracking_uri)
        try:
            client.download_artifacts(run, "cards.json", str(target))
        except Exception as exc:
            raise ReviewRunError(f"run={run}: not a folder, and no MLflow run with a cards.json artifact in "
                                 f"{tracking_uri} ({type(exc).__name__}: {str(exc)[:200]})") from None
    return ReviewTarget(f"mlflow:{run}", target, read_cards_json(cards))
