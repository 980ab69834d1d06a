"""The classifier veto: an LM judge's `support` counts only when the shipped classifier judge does not read the same
snippet as contradicting the claim.

Why: the LM judge reads untrusted text (evidence snippets, web pages) and a model that follows instructions can be
told to answer `support` (docs/reliability.md, "Injection on public attacks": the 1.5B student turned contradicted
claims into `correct` through the judge and the RL tool with every textual defence on). The classifier judge
(factlab:judge-e5s-v1, e5-small + LoRA + a linear head) maps a (claim, snippet) pair to relation probabilities and
follows no instruction: text in the snippet can move its probabilities, never its task. So the decision that
matters, a support that can make a claim `correct`, needs the classifier not to disagree: when the classifier reads
the pair as `contradict` (its own decision, with p(contradict) >= `min_contradict`) or gives it p(support) below
`min_support`, the LM's support or partial support is set aside (relation `insufficient`, a hint naming the snippet
and the probabilities, the card sent to review). The veto never creates a contradiction or a `wrong`: a weak
classifier can cost a `correct`, never add an error. By default it reads evidence from pages fetched over the network
(`scope: web`): the trust boundary is where the text comes from, and the local corpus is the user's own (with the
local corpus in scope, honest supports are lost too: the measured cost is in the docs). Its cost (supports set aside
on honest pairs) and what it catches are measured in `benchmarks/veto.py` and `benchmarks/injection.py`
(docs/reliability.md).

Used by `factlab.checkers.verdict.Verdict` (conf/checker/professional.yaml `verdict.veto`); the fast checker's
judge is the classifier itself, so it runs without one.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from factlab.schema import Evidence, Judgment
from factlab.untrusted import from_the_network

VETOED_RELATIONS: tuple[str, ...] = ("support", "partial_support")
SCOPES: tuple[str, ...] = ("web", "all")
_LOADED: dict[tuple[str, int], object] = {}
_LOAD_LOCK = threading.Lock()


class ClassifierVeto:
    """Set aside an LM support that the classifier judge reads as a contradiction.

    Args:
        model: the classifier judge: `factlab:<shipped name>`, a model folder or an MLflow model URI
            (factlab.tracking.refs.resolve_model).
        min_contradict: the classifier's calibrated p(contradict) a veto needs, on top of `contradict` being its
            decision (factlab.judge.model.Judge.decide); 0 = its decision alone; 1.01 = never on contradiction.
        min_support: an LM support the classifier gives a calibrated p(support) below this is set aside too
            (0 = off; the classifier's own support_threshold = both judges must say support).
        batch_size: pairs per forward pass.
        relations: the LM relations the veto may set aside.
        scope: `web` (default): evidence from pages fetched over the network (`factlab.untrusted.from_the_network`:
            text written by anyone); `all`: the local corpus too (the user's own sources, which cost supports when
            vetoed: docs/reliability.md).

    Raises:
        ModelRefError / ModelSourceError (at the first use): the model reference leads to no judge.
    """

    def __init__(self, model: str = "factlab:judge-e5s-v1", min_contradict: float = 0.0, min_support: float = 0.0,
                 batch_size: int = 32, relations: Sequence[str] = VETOED_RELATIONS, scope: str = "web") -> None:
        if scope not in SCOPES:
            raise ValueError(f"veto.scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        if not 0.0 <= float(min_contradict) <= 1.01:
            raise ValueError(f"veto.min_contradict must be in [0, 1.01], got {min_contradict!r}")
        if not 0.0 <= float(min_support) <= 1.0:
            raise ValueError(f"veto.min_support must be in [0, 1], got {min_support!r}")
        unknown = sorted(set(relations) - set(VETOED_RELATIONS))
        if unknown:
            raise ValueError(f"veto.relations: {', '.join(unknown)} cannot be vetoed; expected a subset of "
                             f"{', '.join(VETOED_RELATIONS)}")
        self.model = str(model)
        self.min_contradict = float(min_contradict)
        self.min_support = float(min_support)
        self.batch_size = int(batch_size)
        self.relations = tuple(relations)
        self.scope = scope
        self._lock = threading.Lock()
        self._judge = None  # set on first use (tests may set a stand-in with labels / predict_proba / decide)

    @property
    def judge(self):
        """The loaded classifier judge (loaded once per process and model, shared by every veto)."""
        from factlab.judge.model import META_FILE, Judge
        from factlab.runtime import ModelSourceError
        from factlab.tracking.refs import resolve_model

        if self._judge is not None:
            return self._judge
        key = (self.model, self.batch_size)
        with _LOAD_LOCK:
            if key not in _LOADED:
                folder = resolve_model(self.model)
                if not (Path(folder) / META_FILE).is_file():
                    raise ModelSourceError(f"veto.model {self.model!r}: {folder} holds no classifier judge "
                                           f"({META_FILE} missing)")
                _LOADED[key] = Judge(folder, batch_size=self.batch_size)
            self._judge = _LOADED[key]
            return self._judge

    def reasons(self, claim: str, snippets: Sequence[str]) -> list[str | None]:
        """Per snippet, why the classifier vetoes an LM support of `claim` from it (None: no veto)."""
        if not snippets:
            return []
        judge = self.judge
        with self._lock:  # one forward pass at a time per veto (claims run on several threads)
            probs = judge.predict_proba([claim] * len(snippets), list(snippets))
        return [self.reason(judge, p) for p in probs]

    def reason(self, judge, probs: Sequence[float]) -> str | None:
        """Why these classifier probabilities veto a support (None: they do not)."""
        p_support, p_contradict = probs[judge.labels.index("support")], probs[judge.labels.index("contradict")]
        if judge.decide(probs)[0] == "contradict" and p_contradict >= self.min_contradict:
            return f"the classifier judge reads that snippet as contradicting the claim (p={p_contradict:.2f})"
        if p_support < self.min_support:
            return (f"the classifier judge gives it p(support)={p_support:.2f} < veto.min_support "
                    f"{self.min_support:.2f}")
        return None

    def apply(self, claim: str, evidence: Sequence[Evidence],
              judgments: Sequence[Judgment]) -> tuple[list[Judgment], list[str]]:
        """The judgments with each vetoed support replaced by `insufficient`, and one hint per veto."""
        judgments = list(judgments)
        asked = [i for i, j in enumerate(judgments) if j.relation in self.relations and i < len(evidence)
                 and (self.scope == "all" or from_the_network(evidence[i].source_id))]
        if not asked:
            return judgments, []
        notes: list[str] = []
        for i, why in zip(asked, self.reasons(claim, [evidence[i].text for i in asked]), strict=True):
            if why is None:
                continue
            was = judgments[i]
            judgments[i] = Judgment("insufficient", was.confidence,
                                    f"classifier veto of the LM judge's {was.relation}: {why}")
            notes.append(f"classifier veto: the LM judge's {was.relation} ({was.confidence:.2f}) from "
                         f"{evidence[i].chunk_id} was set aside: {why}; read the snippet yourself")
        return judgments, notes
