"""CSL-JSON and BibTeX imports, with attachment folders; a malformed BibTeX entry is an error naming the file, line
and field while the other entries still import."""

from __future__ import annotations

import json

import pytest

from factlab.knowledge.attachments import AttachmentGrant, read_attachment
from factlab.knowledge.bibtex import parse_bibtex, read_bibtex
from factlab.knowledge.csljson import read_csl_json, to_csl
from factlab.knowledge.identity import suggest_duplicates
from factlab.knowledge.items import KnowledgeError

CSL = [
    {"id": "fleming1929", "type": "article-journal", "title": "On the antibacterial action of cultures of a "
     "penicillium", "author": [{"family": "Fleming", "given": "Alexander"}], "issued": {"date-parts": [[1929, 6]]},
     "DOI": "10.1093/clinids/2.1.129", "container-title": "British Journal of Experimental Pathology",
     "abstract": "Penicillin inhibits staphylococci.", "keyword": "antibiotics, history"},
    {"id": "who2023", "type": "report", "title": "Antimicrobial resistance", "author": [{"literal": "WHO"}],
     "issued": {"raw": "2023"}},
    ["not", "an", "item"],
    {"type": "book", "title": "no id"},
]

BIB = r"""% a comment line
@string{bjep = "British Journal of Experimental Pathology"}

@article{fleming1929,
  title = {On the Antibacterial Action of Cultures of a {P}enicillium},
  author = {Fleming, Alexander},
  journal = bjep,
  year = 1929,
  month = jun,
  doi = {10.1093/clinids/2.1.129},
  keywords = {antibiotics; history},
  file = {Full Text PDF:files/fleming.txt:text/plain},
}

@article{broken2020,
  title = {An unclosed title,
  author = {Nobody, A.},
  year = 2020
}

@misc{chain1940,
  title = "Penicillin as a Chemotherap{\'e}utic Agent",
  author = {Chain, Ernst and Florey, Howard W. and others},
  year = {1940},
  eprint = {2011.01234}, archivePrefix = {arXiv},
  note = "Prefix " # bjep,
}

@book{nokey
  title = {Missing comma after the key},
}
"""


def test_csl_json_import_with_an_attachment_folder(tmp_path):
    path = tmp_path / "library.json"
    path.write_text(json.dumps(CSL), encoding="utf-8")
    files = tmp_path / "files"
    files.mkdir()
    (files / "fleming1929.txt").write_text("Full text of Fleming 1929.", encoding="utf-8")
    library = read_csl_json(path, files)
    assert [i.ref.item_key for i in library] == ["fleming1929", "who2023"]
    fleming, who = library.items
    assert (fleming.ref.library_id, fleming.year, fleming.doi, fleming.venue, fleming.tags) == (
        "csl:library", 1929, "10.1093/clinids/2.1.129", "British Journal of Experimental Pathology",
        ("antibiotics", "history"))
    assert [(c.family, c.given) for c in fleming.authors] == [("Fleming", "Alexander")]
    assert (who.year, who.authors[0].family) == (2023, "WHO")
    assert [p.split(": ")[1] for p in library.problems] == ["item [2]", "item [3]"]
    assert all(f"{path}: item [" in p and "field `id`" in p for p in library.problems)
    grant = AttachmentGrant.every_item("t", "csl:library")
    assert read_attachment(fleming, fleming.attachments[0], grant) == ["Full text of Fleming 1929."]
    assert to_csl(fleming)["title"] == CSL[0]["title"]


def test_an_edited_csl_record_is_a_new_version(tmp_path):
    path = tmp_path / "library.json"
    path.write_text(json.dumps(CSL[:1]), encoding="utf-8")
    first = read_csl_json(path).items[0].ref
    path.write_text(json.dumps([{**CSL[0], "title": "Edited title"}]), encoding="utf-8")
    second = read_csl_json(path).items[0].ref
    assert first.key == second.key and first.version != second.version
    path.write_text(json.dumps(CSL[:1]), encoding="utf-8")
    assert read_csl_json(path).items[0].ref == first


def test_csl_json_that_is_not_a_list_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"title": "x"}', encoding="utf-8")
    with pytest.raises(KnowledgeError, match="bad.json: expected a JSON list of CSL items"):
        read_csl_json(path)
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(KnowledgeError, match="bad.json: not UTF-8 JSON"):
        read_csl_json(path)


def test_bibtex_import_reads_good_entries_and_names_the_bad_ones(tmp_path):
    path = tmp_path / "refs.bib"
    path.write_text(BIB, encoding="utf-8")
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "fleming.txt").write_text("Fleming's paper.", encoding="utf-8")
    library = read_bibtex(path)
    assert [i.ref.item_key for i in library] == ["fleming1929", "chain1940"]
    fleming = library.get("bibtex:refs", "fleming1929")
    assert (fleming.title, fleming.venue, fleming.year, fleming.citation_key, fleming.tags) == (
        "On the Antibacterial Action of Cultures of a Penicillium", "British Journal of Experimental Pathology", 1929,
        "fleming1929", ("antibiotics", "history"))
    assert fleming.field("month") == "6" and fleming.attachments[0].path == tmp_path / "files" / "fleming.txt"
    chain = library.get("bibtex:refs", "chain1940")
    assert chain.title == "Penicillin as a Chemotherapéutic Agent"
    assert [(c.family, c.given) for c in chain.authors] == [("Chain", "Ernst"), ("Florey", "Howard W.")]
    assert chain.field("note") == "Prefix British Journal of Experimental Pathology"
    broken = [p for p in library.problems if "broken2020" in p]
    assert broken == [f"{path}:16: entry 'broken2020', field `title`: unbalanced braces: the {{ opened at line 16 "
                      "is never closed (the value runs on into 'author = {'...); close it; the entry is skipped"]
    assert [p for p in library.problems if "field `(key)`" in p] == [
        f"{path}:29: entry 'nokey', field `(key)`: expected `@type{{key,` : a citation key followed by a comma; the "
        "entry is skipped"]
    assert len(library.problems) == 2


def test_bibtex_names_accents_and_institutions():
    entries, problems = parse_bibtex(r"@inproceedings{muller2019, title={Stra{\ss}e {\"U}ber Alles}, "
                                     r"author={M{\"u}ller, J{\"o}rg and {World Health Organization} and van der "
                                     r"Berg, Anna}, booktitle={Proc. X}, year={2019}}")
    assert not problems
    [entry] = entries
    assert entry.fields["title"] == "Straße Über Alles"
    assert entry.fields["author"].startswith("Müller, Jörg")


def test_bibtex_errors_name_missing_equals_and_bad_values():
    text = "@article{a1,\n  title {No equals},\n}\n@article{a2,\n  title = ,\n}\n@article{a3, title={Fine}}\n"
    entries, problems = parse_bibtex(text, "r.bib")
    assert [e.key for e in entries] == ["a3"]
    assert [str(p) for p in problems] == [
        "r.bib:2: entry 'a1', field `title`: expected `=` after the field name; the entry is skipped",
        "r.bib:5: entry 'a2', field `title`: expected a value ({...}, \"...\", a number or a macro), got ','; the "
        "entry is skipped"]


def test_bibtex_and_zotero_copies_of_one_work_are_suggested(tmp_path, zotero_db):
    from factlab.knowledge.zotero import read_zotero

    path = tmp_path / "refs.bib"
    path.write_text("@article{fleming2021, title={Penicillin discovery revisited: a historical analysis}, "
                    "author={Fleming, Alexander}, year=2021, doi={10.1016/J.HIST.2021.01.002}}", encoding="utf-8")
    pairs = suggest_duplicates([*read_zotero(zotero_db), *read_bibtex(path)])
    doi_pair = next(p for p in pairs if "same DOI" in p.reasons)
    assert {doi_pair.a.library_id, doi_pair.b.library_id} == {"zotero:1", "bibtex:refs"}
