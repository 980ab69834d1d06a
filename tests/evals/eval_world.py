"""A small synthetic world with gold for every stage, and rule-based stage fakes that reproduce that gold exactly
(so a healthy pipeline makes no mistake) or break one stage on purpose.

Importable by Hydra `_target_` (tests/evals/conftest.py puts this folder on sys.path): `fake_stage(name, world,
broken)` builds one stage, `no_lm()` stands in for the student LM.
"""

from __future__ import annotations

import json
from pathlib import Path

import dspy

from factlab.matching.segment import line_sentence_spans
from factlab.programs.paragraphs import ParagraphSplitter
from factlab.schema import Judgment, normalise_text

SOURCES = [
    {"source_id": "velmora-health", "title": "Velmora health agency", "url": "https://health.velmora.gov/aurelin",
     "tier": 1, "text": "The Velmora health agency approved Aurelin for sale in 2015."},
    {"source_id": "velmora-trial", "title": "Velmora trial report", "url": "https://trials.velmora.gov/2019",
     "tier": 1, "text": "In the 2019 Velmora trial, Aurelin lowered systolic blood pressure by 8 mmHg."},
    {"source_id": "quarnia-geo", "title": "Quarnian geodetic office", "url": "https://geo.quarnia.gov/vex",
     "tier": 1, "text": "Mount Vex, the highest mountain in Quarnia, measures 5100 m according to the Quarnian "
     "geodetic office."},
    {"source_id": "climb-blog", "title": "Climbing blog", "url": "https://climbs.example.net/vex", "tier": 3,
     "text": "Mount Vex saw its first ascent in 1931 by a Quarnian expedition."},
    {"source_id": "brellcorp-annual", "title": "Brellcorp annual report", "url": "https://brellcorp.example.com/ar",
     "tier": 1, "text": "Brellcorp reported revenue of 4.2 billion euros for the 2022 financial year."},
    {"source_id": "brellcorp-staff", "title": "Brellcorp staff figures", "url": "https://stats.example.org/brell",
     "tier": 2, "text": "Brellcorp employs roughly 9,000 people in Europe."},
    {"source_id": "tallis-news", "title": "Tallis local news", "url": "https://news.tallis.example/brell", "tier": 3,
     "text": "A new Brellcorp plant in Tallis was announced, with no opening date yet."},
    {"source_id": "orvian-observatory", "title": "Orvian observatory", "url": "https://obs.orvia.edu/comet",
     "tier": 1, "text": "The Orvian comet returns every 61 years."},
    {"source_id": "orvian-log", "title": "Comet log", "url": "https://comets.example.org/orvian", "tier": 2,
     "text": "Observers last recorded the Orvian comet from Earth in 1986."},
]

# case id -> paragraphs -> sentences: (text, checkworthy, claim gold or None)
# claim gold: (vertical, queries, [(source_id, relation)], relation, label)
WORLD = {
    "syn-med-1": [
        [("Aurelin is a drug sold in Velmora since 2015.", True,
          ("medical", ["Velmora health agency approved Aurelin 2015"], [("velmora-health", "support")], "support",
           "correct")),
         ("Aurelin lowered systolic blood pressure by 12 mmHg in the 2019 Velmora trial.", True,
          ("medical", ["2019 Velmora trial Aurelin systolic blood pressure mmHg"], [("velmora-trial", "contradict")],
           "contradict", "wrong")),
         ("I think this is a remarkable story.", False, None)],
        [("The highest mountain in Quarnia is taller than five kilometres.", True,
          ("general", ["Mount Vex measures 5100 m Quarnian geodetic office"], [("quarnia-geo", "support")], "support",
           "correct")),
         ("Mount Vex was first climbed in 1931.", True,
          ("general", ["Mount Vex first ascent 1931 Quarnian expedition"], [("climb-blog", "support")], "support",
           "correct"))],
    ],
    "syn-fin-1": [
        [("Brellcorp reported revenue of 4.2 billion euros in 2022.", True,
          ("finance", ["Brellcorp revenue 4.2 billion euros 2022"], [("brellcorp-annual", "support")], "support",
           "correct")),
         ("Brellcorp employs about 9,000 people worldwide.", True,
          ("finance", ["Brellcorp employs 9,000 people"], [("brellcorp-staff", "partial_support")],
           "partial_support", "disputed"))],
        [("Brellcorp opened a factory in Tallis in 2020.", True,
          ("finance", ["Brellcorp plant Tallis opening"], [("tallis-news", "insufficient")], "insufficient",
           "unverifiable")),
         ("Investors should feel great about this.", False, None)],
    ],
    "syn-sci-1": [
        [("The Orvian comet returns every 76 years.", True,
          ("science", ["Orvian comet returns every years"], [("orvian-observatory", "contradict")], "contradict",
           "wrong")),
         ("It is a beautiful sight in the night sky.", False, None)],
        [("The comet was last seen from Earth in 1986.", True,
          ("science", ["Orvian comet last recorded from Earth 1986"], [("orvian-log", "support")], "support",
           "correct"))],
    ],
}


def build_cases() -> list[dict]:
    """The world's cases in the case schema (validated when loaded with factlab.data.cases.load_cases)."""
    by_id = {s["source_id"]: s for s in SOURCES}
    cases = []
    for case_id, paragraphs in WORLD.items():
        texts = [" ".join(s[0] for s in sentences) for sentences in paragraphs]
        text = "\n\n".join(texts)
        spans, pos = [], 0
        for t in texts:
            spans.append([pos, pos + len(t)])
            pos += len(t) + 2
        sentences, claims = [], []
        for index, rows in enumerate(paragraphs):
            for sentence, worthy, gold in rows:
                sentences.append({"text": sentence, "checkworthy": worthy, "reason": "fact" if worthy else "opinion"})
                if gold is None:
                    continue
                vertical, queries, evidence, relation, label = gold
                claims.append({
                    "claim_id": f"c{len(claims) + 1}", "text": sentence, "sentence": sentence, "paragraph": index,
                    "checkworthy": True, "vertical": vertical, "queries": queries, "relation": relation, "label": label,
                    "evidence": [{"source_id": sid, "chunk_id": f"{sid}#p1-c1", "text": by_id[sid]["text"],
                                  "tier": by_id[sid]["tier"], "relation": rel} for sid, rel in evidence]})
        cases.append({"case_id": case_id, "lang": "en", "text": text, "paragraphs": spans, "sentences": sentences,
                      "claims": claims, "corpus": "corpus/world.jsonl"})
    return cases


def write_world(folder: Path) -> Path:
    """Write cases.jsonl and corpus/world.jsonl into `folder`; returns it."""
    (folder / "corpus").mkdir(parents=True, exist_ok=True)
    (folder / "corpus" / "world.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SOURCES))
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in build_cases()))
    return folder


class Gold:
    """Lookup tables of the world's gold, keyed by normalised text."""

    def __init__(self, cases: list[dict]) -> None:
        self.sentences = {normalise_text(s["text"]): s["checkworthy"] for c in cases for s in c["sentences"]}
        claims = [cl for c in cases for cl in c["claims"]]
        self.claims = {normalise_text(cl["text"]): cl for cl in claims}
        self.sentence_claims = {normalise_text(cl["sentence"]): cl["text"] for cl in claims}
        self.relations = {(normalise_text(cl["text"]), normalise_text(e["text"])): e["relation"]
                          for cl in claims for e in cl["evidence"]}


def fake_stage(name: str, world: str | None = None, broken: str | None = None):
    """One stage of the world, exact unless `broken` names a failure mode.

    Args:
        name: the stage.
        world: folder written by `write_world` (None: the built-in world).
        broken: "always_support" (judge), "empty" (query_rewrite: the empty string), "drop_last" (extract_claims:
            drops each paragraph's last claim).
    """
    cases = build_cases() if world is None else [json.loads(line) for line in
                                                  (Path(world) / "cases.jsonl").read_text().splitlines()]
    gold = Gold(cases)

    def checkworthy(text):
        return dspy.Prediction(checkworthy=gold.sentences.get(normalise_text(text), True), reason="rule")

    def extract(paragraph, context=""):
        spans = [paragraph[a:b] for a, b in line_sentence_spans(paragraph)]
        claims = [gold.sentence_claims[normalise_text(s)] for s in spans if normalise_text(s) in gold.sentence_claims]
        return dspy.Prediction(claims=claims[:-1] if broken == "drop_last" else claims)

    def review(paragraph, claims):
        return dspy.Prediction(reviewed_claims=list(claims))

    def vertical(claim):
        found = gold.claims.get(normalise_text(claim))
        return dspy.Prediction(vertical=found["vertical"] if found else "general", confidence=0.9)

    def queries(claim):
        if broken == "empty":
            return dspy.Prediction(queries=[""])
        found = gold.claims.get(normalise_text(claim))
        return dspy.Prediction(queries=list(found["queries"]) if found else [claim])

    def judge(claim, evidence):
        out = []
        for snippet in evidence:
            relation = "support" if broken == "always_support" else "irrelevant"
            if broken != "always_support":
                for (c, e), rel in gold.relations.items():
                    if c == normalise_text(claim) and (e in normalise_text(snippet) or normalise_text(snippet) in e):
                        relation = rel
            out.append(Judgment(relation, 0.95, "rule"))
        return dspy.Prediction(judgments=out)

    stages = {"paragraphs": ParagraphSplitter(), "checkworthy": checkworthy, "extract_claims": extract,
              "review_claims": review, "vertical": vertical, "query_rewrite": queries, "judge": judge}
    return stages[name]


def fake_stages(broken: dict[str, str] | None = None) -> dict:
    """All seven stages; `broken` maps a stage to its failure mode."""
    broken = broken or {}
    return {name: fake_stage(name, broken=broken.get(name)) for name in
            ("paragraphs", "checkworthy", "extract_claims", "review_claims", "vertical", "query_rewrite", "judge")}


def no_lm(name: str = "fake"):
    """The student LM of a pipeline whose stages need none."""
    return None
