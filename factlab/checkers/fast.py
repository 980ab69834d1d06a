"""The fast checker: no generative LM call in the hot path.

Rule-based paragraphs -> every sentence of the document judged check-worthy or not in ONE batch (the trained
classifier) -> each check-worthy sentence is its claim, decontextualised deterministically (`factlab.stages.rules`)
-> the vertical of every claim in one batch -> the claim as its own query, retrieval of all claims concurrently ->
every (claim, snippet) pair judged in one batch by the trained judge -> the consistency signal (numbers, units,
percentages, years, names: `factlab.rules.consistency`) -> the business rules -> cards.

It is built of the same parts as every checker (`factlab.checkers.flow.Parts`: stages, retriever, verdict, layers),
with its own stages (conf/checker/fast.yaml: classifiers and rule backends), so its trace, its `fixed=` hooks, its cards
and evaluate.py's scoring and attribution are the shared flow's. A batch that fails falls back to the claim-by-claim
path, where one bad claim becomes an error card and the document goes on. The models are loaded once, when the
checker is built.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tqdm import tqdm

from factlab.checkers import flow
from factlab.checkers.flow import BuiltOfParts, Parts
from factlab.checkers.layers import DocumentLayers
from factlab.checkers.verdict import Verdict
from factlab.matching.segment import sentence_rows, source_sentence
from factlab.models.errors import classify_exception
from factlab.pipeline.meter import StageMeter
from factlab.pipeline.trace import ClaimTrace, DocumentTrace, ParagraphTrace
from factlab.programs.checkworthy import CLASSIFIER_LABELS as CHECKWORTHY_LABELS
from factlab.programs.extract_claims import extraction_input
from factlab.retrieval.encoders import CachedEncoder
from factlab.schema import Judgment, StageName
from factlab.stages.rules import sentence_claims

logger = logging.getLogger(__name__)


class FastChecker(BuiltOfParts):
    """The fast checker over built parts (conf/checker/fast.yaml).

    Args:
        stages: stage name -> built stage: classifiers for checkworthy, vertical and judge (their `.module.classifier`
            is called in batches); the deterministic splitter, sentence claims, grounded review and claim-as-query.
        retriever, verdict, layers, name, progress: as `ProfessionalChecker`. The layers may not run an LM.
        k: snippets searched per claim; only the top `max_snippets` of them are retrieved and judged.
        max_workers: claims retrieved concurrently.
        max_snippets: snippets judged per claim (the best-ranked first).
        snippet_tokens: each snippet's compression budget (None = the retrieval config's); the judge reads
            `max_length` tokens per window, so a shorter snippet is read in fewer windows.
        min_grounding: share of a claim's content words its paragraph must hold (0 = off).
    """

    cache = None  # no claim cache: every claim costs a few milliseconds

    def __init__(self, stages: Mapping[str, Any], retriever, verdict: Verdict, layers: DocumentLayers | None = None,
                 name: str = "fast", k: int = 5, max_workers: int = 4, max_snippets: int = 5,
                 snippet_tokens: int | None = None, min_grounding: float = 0.5, progress: bool = True) -> None:
        layers = layers or DocumentLayers()
        if layers.uses_lm():
            raise ValueError("the fast checker runs no LM: use logic=rules or logic=off, and paragraph_typer=rules or "
                             "a paragraph_type stage with backend=classifier (stage.paragraph_type.backend=classifier "
                             "stage.paragraph_type.model=<a model of recipe=distill_paragraph_type>)")
        self.parts = Parts(name, dict(stages), retriever, verdict, layers, StageMeter(None), progress)
        # only the snippets it judges are retrieved (and compressed): the top `max_snippets` of a search for `k`
        self.k, self.max_workers, self.max_snippets = min(k, max_snippets), max_workers, max_snippets
        self.snippet_tokens, self.min_grounding = snippet_tokens, float(min_grounding)
        if not isinstance(retriever.encoder, CachedEncoder):  # claims and the chunks they share: embedded once
            retriever.encoder = CachedEncoder(retriever.encoder)

    def _classifier(self, stage: str):
        stage = self.stages[stage]
        return getattr(stage, "module", stage).classifier

    # document-level -------------------------------------------------------------------------------------------

    def run(self, document: str, name: str = "document", fixed: Mapping[str, Any] | None = None) -> DocumentTrace:
        fixed = dict(fixed or {})
        if StageName.CHECKWORTHY not in fixed:
            paragraphs = (fixed[StageName.PARAGRAPHS] if StageName.PARAGRAPHS in fixed
                          else flow.split(self.parts, document))
            fixed[StageName.PARAGRAPHS] = paragraphs
            fixed[StageName.CHECKWORTHY] = self.meter.call(StageName.CHECKWORTHY, self.checkworthy_all,
                                                           paragraphs=paragraphs)
        return flow.run_document(self.parts, document, name, fixed, self.paragraph, self.claims_phase)

    def checkworthy_all(self, paragraphs: list[dict]) -> list[list[dict]]:
        """Every sentence of every paragraph with its check-worthiness, from one batched classifier pass."""
        rows = [sentence_rows(paragraph) for paragraph in paragraphs]
        flat = [row for group in rows for row in group]
        if not flat:
            return rows
        classifier = self._classifier(StageName.CHECKWORTHY)
        index = classifier.labels.index(CHECKWORTHY_LABELS[1])
        probs = classifier.predict_proba([row["text"] for row in flat])
        for row, p in zip(flat, probs, strict=True):
            row.update(checkworthy=p[index] >= 0.5, reason=f"classifier p(checkworthy)={p[index]:.2f}")
        return rows

    def paragraph(self, index: int, paragraphs: list[dict], fixed: Mapping[str, Any]) -> ParagraphTrace:
        """A paragraph's claims: each check-worthy sentence, decontextualised from the sentences before it. Gold
        claims (`fixed` extraction or review) go the stage way, through this checker's own stages."""
        if StageName.EXTRACT_CLAIMS in fixed or StageName.REVIEW_CLAIMS in fixed:
            return self._gold_claims(index, paragraphs, fixed)
        rows = fixed[StageName.CHECKWORTHY][index]
        unit = ParagraphTrace(sentences=rows, worthy=extraction_input(r["text"] for r in rows if r["checkworthy"]))
        claims = []
        for i, claim, how in sentence_claims([r["text"] for r in rows], [r["checkworthy"] for r in rows]):
            claims.append(claim)
            if how:
                rows[i]["decontextualised"] = how
        unit.drafts = list(claims)
        claims = flow.ground(unit, paragraphs[index]["text"], list(dict.fromkeys(claims)), self.min_grounding, logger)
        unit.claims = [ClaimTrace(f"p{index + 1}-c{i + 1}", c, source_sentence(c, rows)) for i, c in enumerate(claims)]
        return unit

    def _gold_claims(self, index: int, paragraphs: list[dict], fixed: Mapping[str, Any]) -> ParagraphTrace:
        return flow.stage_paragraph(self.parts, index, paragraphs, fixed, 0, self.min_grounding, logger)

    # claim-level: batched ------------------------------------------------------------------------------------

    def process_claim(self, trace: ClaimTrace, fixed: Mapping[str, Any] | None = None) -> ClaimTrace:
        """One claim, claim by claim (evaluate.py's attribution; the fallback of a failed batch)."""
        return flow.check_claim(self.parts, trace, fixed, k=self.k)

    def claims_phase(self, todo: list[ClaimTrace]) -> None:
        """Vertical (one batch), retrieval (concurrent), judge (one batch over every pair), rules; a failed batch
        falls back to the claim-by-claim path."""
        if not todo:
            return
        try:
            self._batched(todo)
        except Exception as exc:  # the batch failed: claim by claim, each isolated
            logger.warning("batched claims phase failed (%s); checking the %d claims one by one",
                           classify_exception(StageName.JUDGE, exc), len(todo))
            for trace in todo:
                trace.card, trace.error = None, None
            bar = tqdm(total=len(todo), desc="claims", unit="claim", disable=not self.parts.progress)
            with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
                for _ in pool.map(lambda t: (self.process_claim(t), bar.update(1)), todo):
                    pass
            bar.close()

    def _batched(self, todo: list[ClaimTrace]) -> None:
        texts = [t.text for t in todo]
        verticals = self.meter.call(StageName.VERTICAL, self._classifier(StageName.VERTICAL).predict, texts=texts)
        for trace, (vertical, _) in zip(todo, verticals, strict=True):
            trace.vertical, trace.queries = vertical, [trace.text]
        encoder = self.retriever.encoder
        getattr(encoder, "encode_queries", encoder.encode)(texts)  # every claim's query vector in one batch
        bar = tqdm(total=len(todo), desc="retrieval", unit="claim", disable=not self.parts.progress)

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
            judged = self.meter.call(StageName.JUDGE, self._classifier(StageName.JUDGE).predict,
                                     texts=[t.text for t, _ in pairs], pairs=[s for _, s in pairs])
            for (trace, _), (relation, p) in zip(pairs, judged, strict=True):
                trace.judgments.append(Judgment(relation, p, f"classifier p={p:.2f}"))
        for trace in todo:
            if trace.error is not None:
                flow.error_card(self.parts, trace)
                continue
            try:
                self.meter.call("rules", flow.decide, parts=self.parts, trace=trace)
            except Exception as exc:  # this claim's card fails, not the document
                trace.error = classify_exception("rules", exc)
                flow.error_card(self.parts, trace)

