# python -m factlab.data.retrieval_bench [outputs/retrieval_bench] [--max-passages 60000] [--max-queries 500]
"""A public retrieval benchmark: the evidence passages of the public fact-checking sets as one corpus, their claims
as queries, the gold passages as relevance labels.

Passages come from the dataset loaders (conf/dataset/<name>.yaml) where one exists, and from the readers below for
Fool Me Twice and Check-COVID: a sentence of evidence is a passage (Climate-FEVER, FEVEROUS, COVID-Fact, WiCE, ...),
a scientific abstract is a passage (SciFact with its whole abstract corpus as distractors, Check-COVID), a bundled
corpus record is a passage. Chinese claims with gold passages exist only in the bundled set, so the Chinese NLI sets
are added as a PROXY: their premises are passages, their entailed hypotheses the queries (`<name>_proxy`).

The same normalised text (`factlab.schema.normalise_text`) is one passage: its gold labels are merged, and so are the
gold passages of a query text that several rows of one dataset repeat (HealthVer: one row per claim-evidence pair).
Queries are sampled (seeded) up to `max_queries` per dataset; every gold passage of a kept query is in the corpus,
and the other passages fill it up to `max_passages` in a seeded order. All passages are tier 3: the public sets
carry no authority. Output, under the folder given:

- `sources/<dataset>.jsonl`: one source record per passage (datasets/README.md: source_id, title, text, tier, lang,
  vertical), each in the file of the first dataset (in DATASETS order) that holds it: what the retriever ingests.
- `queries.jsonl`: {"query", "lang", "dataset", "gold": [source_id, ...]}.
- `manifest.json`: the settings and the counts per dataset and language.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from factlab.data.jsonl import iter_jsonl
from factlab.data.rows import read_rows
from factlab.schema import normalise_text

GOLD_RELATIONS = frozenset({"support", "contradict", "partial_support"})  # the passage decides the claim
PROXY_RELATIONS = frozenset({"support"})  # NLI proxy: only an entailed hypothesis is a query of its premise
TITLE_CHARS = 80  # a passage without a title of its own is titled by its opening words (the indexer skips a title
# the text starts with, so nothing is repeated and no constant word like "healthver" enters BM25)


@dataclass(frozen=True)
class Passage:
    """A passage as a dataset gives it."""

    text: str
    title: str
    lang: str
    vertical: str


@dataclass(frozen=True)
class Query:
    """A claim of a dataset and the texts of its gold passages."""

    query: str
    lang: str
    gold: tuple[str, ...]


@dataclass
class Part:
    """What one dataset contributes: every passage (gold and not) and its queries."""

    name: str
    passages: list[Passage] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)


@dataclass
class Corpus:
    """The built benchmark: records per source file, queries, counts."""

    records: dict[str, list[dict]]
    queries: list[dict]
    counts: dict


def passage_id(text: str) -> str:
    """The source id of a passage: a hash of its normalised text (so a duplicate gets the same id).

    >>> passage_id("The drug, reduced mortality!") == passage_id("the drug reduced  mortality")
    True
    >>> passage_id("x")
    'rb-11f6ad8ec52a2984'
    """
    return "rb-" + hashlib.sha1(normalise_text(text).encode("utf-8")).hexdigest()[:16]


def opening_words(text: str, limit: int = TITLE_CHARS) -> str:
    """The first words of a text, at most `limit` characters (whole words where there are spaces).

    >>> opening_words("Water boils at 100 C at sea level.", 20)
    'Water boils at 100'
    >>> opening_words("青霉素于1928年由弗莱明发现。", 6)
    '青霉素于19'
    """
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def _seeded_order(keys: Iterable[str], seed: int, salt: str) -> list[str]:
    """`keys` in a fixed pseudo-random order that depends only on the keys, the seed and the salt."""
    return sorted(keys, key=lambda key: hashlib.sha1(f"{seed}\n{salt}\n{key}".encode()).hexdigest())


def build_corpus(parts: Sequence[Part], max_passages: int, max_queries: int, seed: int = 0) -> Corpus:
    """Deduplicate, sample and label: the corpus, the queries and their counts.

    Args:
        parts: per dataset, its passages and queries (gold given as passage texts).
        max_passages: the most passages in the corpus; the gold passages of kept queries come first.
        max_queries: the most queries per dataset (a seeded sample when a dataset has more).
        seed: the sampling seed (the same inputs and seed give the same corpus).

    Returns:
        The Corpus; a query whose gold passages would not fit in `max_passages` is left out.

    >>> part = Part("d", [Passage("A b.", "T", "en", "general"), Passage("a B", "T", "en", "general")],
    ...             [Query("q?", "en", ("A b.",)), Query("Q", "en", ("a b",))])
    >>> corpus = build_corpus([part], 10, 5)
    >>> [len(corpus.records["d"]), corpus.queries == [{"query": "q?", "lang": "en", "dataset": "d",
    ...                                                "gold": [passage_id("a b")]}]]
    [1, True]
    """
    pool: dict[str, tuple[str, Passage]] = {}  # normalised text -> (first dataset, passage)
    for part in parts:
        for passage in part.passages:
            key = normalise_text(passage.text)
            if key and key not in pool:
                pool[key] = (part.name, passage)
    chosen: list[tuple[str, Query, list[str]]] = []
    for part in parts:
        merged: dict[str, tuple[Query, list[str]]] = {}
        for query in part.queries:
            gold = [key for key in map(normalise_text, query.gold) if key in pool]
            qkey = normalise_text(query.query)
            if not gold or not qkey:
                continue
            if qkey in merged:
                merged[qkey][1].extend(key for key in gold if key not in merged[qkey][1])
            else:
                merged[qkey] = (query, list(dict.fromkeys(gold)))
        for qkey in _seeded_order(merged, seed, part.name)[:max_queries]:
            chosen.append((part.name, *merged[qkey]))
    # Round robin over datasets so that a tight budget cuts every dataset's queries, not the last datasets'.
    by_dataset: dict[str, list[tuple[Query, list[str]]]] = {}
    for name, query, gold in chosen:
        by_dataset.setdefault(name, []).append((query, gold))
    required: dict[str, None] = {}
    kept: list[tuple[str, Query, list[str]]] = []
    for rank in range(max((len(v) for v in by_dataset.values()), default=0)):
        for name, items in by_dataset.items():
            if rank < len(items):
                query, gold = items[rank]
                new = [key for key in gold if key not in required]
                if len(required) + len(new) <= max_passages:
                    required.update(dict.fromkeys(new))
                    kept.append((name, query, gold))
    rest = _seeded_order((key for key in pool if key not in required), seed, "passages")
    keys = list(required) + rest[:max(0, max_passages - len(required))]
    records: dict[str, list[dict]] = {}
    for key in sorted(keys, key=lambda key: passage_id(key)):
        name, passage = pool[key]
        records.setdefault(name, []).append({
            "source_id": passage_id(key), "title": passage.title or opening_words(passage.text),
            "text": passage.text.strip(), "tier": 3, "lang": passage.lang, "vertical": passage.vertical})
    order = {part.name: position for position, part in enumerate(parts)}
    kept.sort(key=lambda item: (order[item[0]], passage_id(item[1].query)))
    queries = [{"query": query.query.strip(), "lang": query.lang, "dataset": name,
                "gold": [passage_id(key) for key in gold]} for name, query, gold in kept]
    records = dict(sorted(records.items(), key=lambda item: order[item[0]]))
    return Corpus(records, queries, count(records, queries))


def count(records: dict[str, list[dict]], queries: Sequence[dict]) -> dict:
    """Passages per dataset (of first origin) and language, and queries per dataset and language.

    >>> count({"d": [{"lang": "en"}, {"lang": "zh"}]}, [{"dataset": "d", "lang": "en"}])["passages"]
    {'d': {'en': 1, 'zh': 1}, 'total': 2}
    """
    passages = {name: dict(sorted(Counter(r["lang"] for r in rows).items())) for name, rows in records.items()}
    asked: dict[str, Counter] = {}
    for query in queries:
        asked.setdefault(query["dataset"], Counter())[query["lang"]] += 1
    return {"passages": {**passages, "total": sum(len(rows) for rows in records.values())},
            "passages_per_lang": dict(sorted(Counter(r["lang"] for rows in records.values() for r in rows).items())),
            "queries": {**{name: dict(sorted(c.items())) for name, c in asked.items()}, "total": len(queries)},
            "queries_per_lang": dict(sorted(Counter(q["lang"] for q in queries).items()))}


def write_corpus(corpus: Corpus, out: Path, settings: dict) -> None:
    """Write sources/<dataset>.jsonl, queries.jsonl and manifest.json under `out` (sources/ is replaced whole)."""
    sources = out / "sources"
    sources.mkdir(parents=True, exist_ok=True)
    for stale in sources.glob("*.jsonl"):
        if stale.stem not in corpus.records:
            stale.unlink()
    for name, rows in corpus.records.items():
        _write_if_changed(sources / f"{name}.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    _write_if_changed(out / "queries.jsonl", "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in corpus.queries))
    _write_if_changed(out / "manifest.json", json.dumps({"settings": settings, **corpus.counts}, indent=2,
                                                        ensure_ascii=False) + "\n")


def _write_if_changed(path: Path, text: str) -> None:
    """Leave an identical file untouched, so an incremental index build sees nothing to redo."""
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


# --- parts from the public sets ---------------------------------------------------------------------------------


def part_from_cases(name: str, cases: Sequence[dict], *, unit: str, relations: frozenset[str] = GOLD_RELATIONS,
                    default_vertical: str = "general") -> Part:
    """A Part from schema cases (what every dataset loader returns).

    Args:
        name: the dataset name in the benchmark.
        cases: the loaded cases.
        unit: "evidence" (each evidence item's text is a passage) or "source" (each source record of the cases is a
            passage, gold when an evidence item points into it).
        relations: the evidence relations that make a passage gold for its claim.
        default_vertical: the vertical of a case that names none.

    >>> case = {"lang": "en", "sources": [{"source_id": "s", "title": "T", "text": "A b. C d."}],
    ...         "claims": [{"text": "q", "evidence": [{"source_id": "s", "text": "A b.", "relation": "support"}]}]}
    >>> part_from_cases("d", [case], unit="source").queries
    [Query(query='q', lang='en', gold=('A b. C d.',))]
    >>> part_from_cases("d", [case], unit="evidence").passages[0].text
    'A b.'
    """
    if unit not in ("evidence", "source"):
        raise ValueError(f"unit: expected 'evidence' or 'source', got {unit!r}")
    part = Part(name)
    for case in cases:
        lang, vertical = case["lang"], case.get("vertical") or default_vertical
        sources = {s["source_id"]: s for s in case.get("sources", [])}
        if unit == "source":
            part.passages += [Passage(_source_text(s), s.get("title", ""), s.get("lang", lang), vertical)
                              for s in sources.values()]
        for claim in case["claims"]:
            gold = []
            for item in claim.get("evidence", []):
                title = sources.get(item["source_id"], {}).get("title", "")
                if unit == "evidence":
                    part.passages.append(Passage(item["text"], _own_title(title, case), lang, vertical))
                    text = item["text"]
                else:
                    text = _source_text(sources[item["source_id"]]) if item["source_id"] in sources else ""
                if item.get("relation", claim.get("relation")) in relations and text:
                    gold.append(text)
            if gold:
                part.queries.append(Query(claim["text"], lang, tuple(dict.fromkeys(gold))))
    return part


def _source_text(source: dict) -> str:
    return " ".join(source["pages"]) if "pages" in source else source["text"]


def _own_title(title: str, case: dict) -> str:
    """A source title that names the source; the flat loaders' placeholder `<dataset> evidence` does not."""
    return "" if title.endswith(" evidence") and case["case_id"].startswith(title[:-len(" evidence")]) else title


def fool_me_twice_part(paths: Sequence[Path]) -> Part:
    """Fool Me Twice: gold evidence sentences (the claim's gold) and the 10 retrieved sentences of the page
    (hard distractors), titled by the Wikipedia page."""
    part = Part("fool_me_twice")
    for path in paths:
        for _, row in iter_jsonl(path):
            title = str(row.get("wikipedia_page", "")).replace("_", " ")
            gold = [e["text"] for e in row["gold_evidence"] if e["text"].strip()]
            part.passages += [Passage(e["text"], title, "en", "general")
                              for e in [*row["gold_evidence"], *row["retrieved_evidence"]] if e["text"].strip()]
            if gold:
                part.queries.append(Query(row["text"], "en", tuple(gold)))
    return part


def check_covid_part(corpus_path: Path, claim_paths: Sequence[Path]) -> Part:
    """Check-COVID: CORD-19 abstracts (title + sentences) as passages; a SUPPORT / REFUTE claim's gold is the
    abstract its evidence sentences come from."""
    part = Part("check_covid")
    abstracts = {}
    for _, row in iter_jsonl(corpus_path):
        abstracts[row["cord_id"]] = " ".join(s.strip() for s in row["abstract"])
        part.passages.append(Passage(abstracts[row["cord_id"]], row["title"], "en", "medical"))
    for path in claim_paths:
        for _, row in iter_jsonl(path):
            if row["label"] in ("SUPPORT", "REFUTE") and row["cord_id"] in abstracts:
                part.queries.append(Query(row["claim"], "en", (abstracts[row["cord_id"]],)))
    return part


def scifact_corpus_passages(path: Path) -> list[Passage]:
    """Every abstract of the SciFact corpus csv (the claims cite a small part of it: the rest are distractors)."""
    from factlab.data.loaders.corpus_join import parse_sentences

    return [Passage(" ".join(s.strip() for s in parse_sentences(row["abstract"])), row["title"], "en", "medical")
            for _, row in read_rows(path, "csv")]


# name in the benchmark -> (dataset config, unit, relations); the order is the order of dedup (first origin wins)
CONFIGURED = {
    "bundled": ("bundled", "source", GOLD_RELATIONS),
    "scifact": ("scifact", "source", GOLD_RELATIONS),
    "climate_fever": ("climate_fever", "evidence", GOLD_RELATIONS),
    "healthver": ("healthver", "evidence", GOLD_RELATIONS),
    "covidfact": ("covidfact", "evidence", GOLD_RELATIONS),
    "wice": ("wice", "evidence", GOLD_RELATIONS),
    "feverous": ("feverous", "evidence", GOLD_RELATIONS),
    "averitec": ("averitec", "evidence", GOLD_RELATIONS),
    "fever_symmetric": ("fever_symmetric", "evidence", GOLD_RELATIONS),
    "vitaminc": ("vitaminc", "evidence", GOLD_RELATIONS),
    "ocnli_proxy": ("ocnli", "evidence", PROXY_RELATIONS),
    "cnli_proxy": ("cnli", "evidence", PROXY_RELATIONS),
    "xnli_zh_proxy": ("xnli_zh", "evidence", PROXY_RELATIONS),
}


def public_parts() -> list[Part]:
    """Every Part of the public sets, read through the dataset configs (FACTLAB_DATA_ROOT) and their loaders.

    Raises:
        DatasetConfigError: the data folder is missing (naming FACTLAB_DATA_ROOT and the fix).
    """
    from tqdm import tqdm

    from factlab.config import compose_config
    from factlab.data.loaders.build import resolve_files
    from factlab.data.registry import load_dataset

    parts = []
    data_root = None
    for name, (config, unit, relations) in tqdm(CONFIGURED.items(), desc="datasets", unit="set"):
        cfg = compose_config("evaluate", [f"dataset={config}"]).dataset
        part = part_from_cases(name, load_dataset(cfg).cases, unit=unit, relations=relations,
                               default_vertical=cfg.get("vertical") or "general")
        if name == "scifact":
            (corpus_file,) = resolve_files(config, cfg.data_root, [cfg.corpus.file])
            part.passages += scifact_corpus_passages(corpus_file)
            data_root = cfg.data_root
        parts.append(part)
    parts.append(fool_me_twice_part(resolve_files("fool_me_twice", data_root, ["fool_me_twice/dataset/*.jsonl"])))
    folder = "check_covid/Check-COVID"
    parts.append(check_covid_part(*resolve_files("check_covid", data_root, [f"{folder}/corpus.json"]),
                                  resolve_files("check_covid", data_root, [f"{folder}/Check-COVID_all.json"])))
    return parts


def build(out: Path, max_passages: int, max_queries: int, seed: int = 0) -> Corpus:
    """Build the benchmark from the public sets and write it under `out`."""
    corpus = build_corpus(public_parts(), max_passages, max_queries, seed)
    write_corpus(corpus, out, {"max_passages": max_passages, "max_queries": max_queries, "seed": seed})
    return corpus


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=Path("outputs/retrieval_bench"))
    parser.add_argument("--max-passages", type=int, default=60000)  # 60k: big enough that distractors matter
    parser.add_argument("--max-queries", type=int, default=500)  # per dataset: the benchmark's run time
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    corpus = build(args.out, args.max_passages, args.max_queries, args.seed)
    print(json.dumps(corpus.counts, indent=2))


if __name__ == "__main__":
    main()
