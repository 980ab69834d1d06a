"""The fast checker: no generative LM call in the hot path.

Rule-based paragraphs -> every sentence of the document judged check-worthy or not in ONE batch (the trained
classifier) -> each check-worthy sentence is its claim, decontextualised deterministically
(`factlab.checkers.claims`) -> the vertical of every claim in one batch -> the claim as its own query, retrieval of
all claims concurrently -> every (claim, snippet) pair judged in one batch by the trained judge -> the consistency
signal (numbers, units, percentages, years, names: `factlab.rules.consistency`) -> the business rules -> cards.

It is a `Pipeline` with other stages, so its trace, its `fixed=` hooks, its cards and evaluate.py's scoring and
attribution are the pipeline's. A batch that fails falls back to the claim-by-claim path, where one bad claim
becomes an error card and the document goes on. The models are loaded once, when the checker is built.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tqdm import tqdm

from factlab.checkers.claims import sentence_claims
from factlab.models.errors import classify_exception
from factlab.pipeline.pipeline import Pipeline, sentence_rows, source_sentence
from factlab.pipeline.trace import ClaimTrace, DocumentTrace, ParagraphTrace
from factlab.programs.checkworthy import CLASSIFIER_LABELS as CHECKWORTHY_LABELS
from factlab.programs.extract_claims import extraction_input
from factlab.retrieval.encoders import CachedEncoder
from factlab.schema import Judgment

logger = logging.getLogger(__name__)


class FastChecker(Pipeline):
    """The fast checker over built stages (`factlab.checkers.build.fast_stages`: classifiers for checkworthy,
    vertical and judge; the deterministic splitter, sentence claims, grounded review and claim-as-query).

    Args:
        stages, retriever, rules, k, sources, progress, skipped_sources, consistency, min_grounding: as `Pipeline`.
        max_workers: claims retrieved concurrently.
        max_snippets: snippets judged per claim (the best-ranked first).
        snippet_tokens: each snippet's compression budget (None = the retrieval config's); the judge reads
            `max_length` tokens per window, so a shorter snippet is read in fewer windows.
    """

    name = "fast"

    def __init__(self, stages: Mapping[str, Any], retriever, rules, k: int = 5, max_workers: int = 4,
                 max_snippets: int = 5, sources: list | None = None, progress: bool = True,
                 skipped_sources: list[str] | None = None, consistency: Mapping[str, Any] | None = None,
                 min_grounding: float = 0.5, snippet_tokens: int | None = None, routing=None,
                 document_checks: Sequence[str] = (), verticals=None, logic=None, timeliness=None,
                 typer=None) -> None:
        # only the snippets it judges are retrieved (and compressed): the top `max_snippets` of a search for `k`
        super().__init__(stages, retriever, rules, student=None, k=min(k, max_snippets), max_workers=max_workers,
                         context_chars=0, cache=None, sources=sources, progress=progress,
                         skipped_sources=skipped_sources, consistency=consistency, min_grounding=min_grounding,
                         routing=routing, document_checks=document_checks, verticals=verticals, logic=logic,
                         timeliness=timeliness, typer=typer)
        self.max_snippets, self.snippet_tokens = max_snippets, snippet_tokens
        if not isinstance(retriever.encoder, CachedEncoder):  # claims and the chunks they share: embedded once
            retriever.encoder = CachedEncoder(retriever.encoder)

    def _classifier(self, stage: str):
        return self.stages[stage].classifier

    # document-level -------------------------------------------------------------------------------------------

    def run(self, document: str, name: str = "document", fixed: Mapping[str, Any] | None = None) -> DocumentTrace:
        fixed = dict(fixed or {})
        if "checkworthy" not in fixed:
            paragraphs = fixed["paragraphs"] if "paragraphs" in fixed else self.split(document)
            fixed["paragraphs"] = paragraphs
            fixed["checkworthy"] = self.meter.call("checkworthy", self.checkworthy_all, paragraphs=paragraphs)
        return super().run(document, name=name, fixed=fixed)

    def checkworthy_all(self, paragraphs: list[dict]) -> list[list[dict]]:
        """Every sentence of every paragraph with its check-worthiness, from one batched classifier pass."""
        rows = [sentence_rows(paragraph) for paragraph in paragraphs]
        flat = [row for group in rows for row in group]
        if not flat:
            return rows
        classifier = self._classifier("checkworthy")
        index = classifier.labels.index(CHECKWORTHY_LABELS[1])
        probs = classifier.predict_proba([row["text"] for row in flat])
        for row, p in zip(flat, probs, strict=True):
            row.update(checkworthy=p[index] >= 0.5, reason=f"classifier p(checkworthy)={p[index]:.2f}")
        return rows

    def _paragraph(self, index: int, paragraphs: list[dict], fixed: Mapping[str, Any]) -> ParagraphTrace:
        """A paragraph's claims: each check-worthy sentence, decontextualised from the sentences before it."""
        if "extract_claims" in fixed or "review_claims" in fixed:
            return super()._paragraph(index, paragraphs, fixed)
        rows = fixed["checkworthy"][index]
        unit = ParagraphTrace(sentences=rows, worthy=extraction_input(r["text"] for r in rows if r["checkworthy"]))
        claims = []
        for i, claim, how in sentence_claims([r["text"] for r in rows], [r["checkworthy"] for r in rows]):
            claims.append(claim)
            if how:
                rows[i]["decontextualised"] = how
        unit.drafts = list(claims)
        claims = self.ground(unit, paragraphs[index]["text"], list(dict.fromkeys(claims)))
        unit.claims = [ClaimTrace(f"p{index + 1}-c{i + 1}", c, source_sentence(c, rows)) for i, c in enumerate(claims)]
        return unit

    # claim-level: batched ------------------------------------------------------------------------------------

    def claims_phase(self, todo: list[ClaimTrace]) -> None:
        """Vertical (one batch), retrieval (concurrent), judge (one batch over every pair), rules; a failed batch
        falls back to the claim-by-claim path."""
        if not todo:
            return
        try:
            self._batched(todo)
        except Exception as exc:  # the batch failed: claim by claim, each isolated
            logger.warning("batched claims phase failed (%s); checking the %d claims one by one",
                           classify_exception("judge", exc), len(todo))
            for trace in todo:
                trace.card, trace.error = None, None
            super().claims_phase(todo)

    def _batched(self, todo: list[ClaimTrace]) -> None:
        texts = [t.text for t in todo]
        verticals = self.meter.call("vertical", self._classifier("vertical").predict, texts=texts)
        for trace, (vertical, _) in zip(todo, verticals, strict=True):
            trace.vertical, trace.queries = vertical, [trace.text]
        encoder = self.retriever.encoder
        getattr(encoder, "encode_queries", encoder.encode)(texts)  # every claim's query vector in one batch
        bar = tqdm(total=len(todo), desc="retrieval", unit="claim", disable=not self.progress)

        def retrieve(trace: ClaimTrace) -> None:
            try:
                trace.evidence = self.meter.call("retrieval", self.retriever.search, queries=trace.queries, k=self.k,
                                                 claim=trace.text, max_tokens=self.snippet_tokens)
            except Exception as exc:  # this claim has no evidence; the others go on
                trace.error = classify_exception("retrieval", exc)
            bar.update(1)

        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            list(pool.map(retrieve, todo))
        bar.close()
        pairs = [(trace, snippet.text) for trace in todo if trace.error is None for snippet in trace.evidence]
        if pairs:
            judged = self.meter.call("judge", self._classifier("judge").predict,
                                     texts=[t.text for t, _ in pairs], pairs=[s for _, s in pairs])
            for (trace, _), (relation, p) in zip(pairs, judged, strict=True):
                trace.judgments.append(Judgment(relation, p, f"classifier p={p:.2f}"))
        for trace in todo:
            if trace.error is not None:
                self._error_card(trace)
                continue
            try:
                self.meter.call("rules", self.decide, trace=trace)
            except Exception as exc:  # this claim's card fails, not the document
                trace.error = classify_exception("rules", exc)
                self._error_card(trace)
