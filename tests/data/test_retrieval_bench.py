"""The public retrieval benchmark's builder (factlab/data/retrieval_bench.py) on tiny synthetic inputs: dedup merges
gold labels, caps are deterministic, the records are what the real ingester reads, the readers of the raw sets."""

from __future__ import annotations

import json

from factlab.data.retrieval_bench import (
    Part,
    Passage,
    Query,
    build_corpus,
    check_covid_part,
    fool_me_twice_part,
    part_from_cases,
    passage_id,
    write_corpus,
)
from factlab.retrieval.ingest import ingest
from factlab.retrieval.tiers import TierTables


def _passage(text: str, lang: str = "en") -> Passage:
    return Passage(text, "", lang, "general")


def _parts() -> list[Part]:
    first = Part("alpha", [_passage(f"Alpha passage number {n}.") for n in range(30)],
                 [Query(f"alpha claim {n}", "en", (f"Alpha passage number {n}.",)) for n in range(20)])
    second = Part("beta", [_passage(f"贝塔段落第{n}号。", "zh") for n in range(30)],
                  [Query(f"贝塔论断{n}", "zh", (f"贝塔段落第{n}号。",)) for n in range(20)])
    return [first, second]


def test_duplicate_passages_are_one_passage_with_merged_gold_labels():
    part = Part("d", [_passage("Water boils at 100 C."), _passage("water boils at 100 C"), _passage("Ice is cold.")],
                [Query("Does water boil at 100?", "en", ("Water boils at 100 C.",)),
                 Query("does water boil at 100", "en", ("Ice is cold.",)),  # the same query text, another gold
                 Query("Other", "en", ("water  BOILS at 100 c!",))])
    other = Part("e", [_passage("WATER boils at 100 C.")], [Query("Boiling?", "en", ("Water boils at 100 C.",))])
    corpus = build_corpus([part, other], max_passages=10, max_queries=10)
    assert [r["text"] for r in corpus.records["d"]] == sorted(["Water boils at 100 C.", "Ice is cold."],
                                                              key=passage_id)
    assert "e" not in corpus.records  # its only passage is d's: counted where it first came from
    boil, ice = passage_id("Water boils at 100 C."), passage_id("Ice is cold.")
    gold = {(q["dataset"], q["query"]): q["gold"] for q in corpus.queries}
    assert sorted(gold[("d", "Does water boil at 100?")]) == sorted([boil, ice])
    assert gold[("d", "Other")] == [boil] and gold[("e", "Boiling?")] == [boil]
    assert corpus.counts["passages"] == {"d": {"en": 2}, "total": 2}
    assert corpus.counts["queries"]["d"] == {"en": 2}


def test_queries_without_gold_in_the_corpus_do_not_count():
    part = Part("d", [_passage("A passage.")], [Query("q1", "en", ("Not a passage anywhere.",)), Query("q2", "en", ())])
    assert build_corpus([part], 10, 10).queries == []


def test_caps_are_deterministic_and_keep_every_gold_passage():
    one = build_corpus(_parts(), max_passages=25, max_queries=8, seed=3)
    again = build_corpus(_parts(), max_passages=25, max_queries=8, seed=3)
    other_seed = build_corpus(_parts(), max_passages=25, max_queries=8, seed=4)
    assert one == again
    assert {q["query"] for q in one.queries} != {q["query"] for q in other_seed.queries}
    assert one.counts["queries"] == {"alpha": {"en": 8}, "beta": {"zh": 8}, "total": 16}
    ids = {r["source_id"] for rows in one.records.values() for r in rows}
    assert len(ids) == 25 and one.counts["passages"]["total"] == 25
    assert all(set(q["gold"]) <= ids for q in one.queries)
    assert all(r["tier"] == 3 for rows in one.records.values() for r in rows)


def test_a_tight_passage_budget_drops_queries_from_every_dataset():
    corpus = build_corpus(_parts(), max_passages=6, max_queries=20)
    assert corpus.counts["queries"] == {"alpha": {"en": 3}, "beta": {"zh": 3}, "total": 6}
    assert corpus.counts["passages"]["total"] == 6


def test_written_folder_is_what_the_ingester_reads(tmp_path):
    corpus = build_corpus(_parts(), max_passages=40, max_queries=5)
    write_corpus(corpus, tmp_path, {"max_passages": 40})
    sources, chunks, issues = ingest(tmp_path / "sources", max_chars=800, tiers=TierTables({}))
    assert issues == []
    assert {s.source_id for s in sources} == {r["source_id"] for rows in corpus.records.values() for r in rows}
    assert {s.tier for s in sources} == {3} and {s.lang for s in sources} == {"en", "zh"}
    record = json.loads((tmp_path / "sources" / "alpha.jsonl").read_text().splitlines()[0])
    assert set(record) == {"source_id", "title", "text", "tier", "lang", "vertical"}
    queries = [json.loads(line) for line in (tmp_path / "queries.jsonl").read_text().splitlines()]
    assert set(queries[0]) == {"query", "lang", "dataset", "gold"}
    assert json.loads((tmp_path / "manifest.json").read_text())["passages"]["total"] == 40
    assert len(chunks) == 40


def test_part_from_cases_gold_relations_and_units():
    case = {"case_id": "x-1", "lang": "en", "sources": [
        {"source_id": "s1", "title": "x evidence", "text": "One. Two."},
        {"source_id": "s2", "title": "Doc", "pages": ["Three.", "Four."]}],
        "claims": [{"text": "c", "relation": "support", "evidence": [
            {"source_id": "s1", "text": "One.", "relation": "insufficient"},
            {"source_id": "s2", "text": "Four.", "relation": "contradict"}]}]}
    by_evidence = part_from_cases("x", [case], unit="evidence")
    assert by_evidence.queries == [Query("c", "en", ("Four.",))]
    assert [(p.text, p.title) for p in by_evidence.passages] == [("One.", ""), ("Four.", "Doc")]  # placeholder title
    by_source = part_from_cases("x", [case], unit="source")
    assert by_source.queries == [Query("c", "en", ("Three. Four.",))]
    assert part_from_cases("x", [case], unit="evidence", relations=frozenset({"support"})).queries == []


def test_readers_of_fool_me_twice_and_check_covid(tmp_path):
    fm2 = tmp_path / "fm2.jsonl"
    fm2.write_text(json.dumps({"text": "Gandhi was shot in 1982.", "wikipedia_page": "Gandhi_(film)",
                               "gold_evidence": [{"text": "Gandhi premiered in 1982."}],
                               "retrieved_evidence": [{"text": "Gandhi premiered in 1982."}, {"text": "It won."}]})
                   + "\n")
    part = fool_me_twice_part([fm2])
    assert part.queries == [Query("Gandhi was shot in 1982.", "en", ("Gandhi premiered in 1982.",))]
    assert {p.title for p in part.passages} == {"Gandhi (film)"} and len(part.passages) == 3
    corpus, claims = tmp_path / "corpus.json", tmp_path / "claims.json"
    corpus.write_text(json.dumps({"cord_id": "a1", "title": "T", "abstract": ["S one.", "S two."]}) + "\n")
    claims.write_text("".join(json.dumps({"claim": f"c{n}", "cord_id": "a1", "label": label}) + "\n"
                              for n, label in enumerate(["SUPPORT", "REFUTE", "NOTENOUGHINFO"])))
    part = check_covid_part(corpus, [claims])
    assert [q.query for q in part.queries] == ["c0", "c1"] and part.queries[0].gold == ("S one. S two.",)
