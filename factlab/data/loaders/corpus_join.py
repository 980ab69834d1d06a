"""Claims whose evidence points into a separate corpus of documents (scifact: claims + abstracts).

A claim row carries ``{doc_id: [{"sentences": [i, ...], "label": L}, ...]}`` and the ids of the documents it
cites; the corpus file gives each document's title and its sentences. Every cited or evidence document becomes an
inline source of the case; each gold sentence becomes an evidence item. A claim without evidence gets the
`missing_label` (SciFact's NOT ENOUGH INFO).
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Mapping, Sequence

from factlab.data.errors import CaseError
from factlab.data.loaders.build import (
    CaseCollector,
    LabelMap,
    Snippet,
    build_case,
    get_field,
    get_text,
    iter_rows,
    resolve_files,
)
from factlab.data.rows import read_rows


def parse_sentences(value: object) -> list[str]:
    """Sentences of a corpus cell: a list, or a printed Python / numpy / JSON list of string literals.

    numpy prints arrays without commas (``['a' 'b']``), which Python would glue into one string, so string
    literals are read one token at a time.

    >>> parse_sentences("['One.'\\n \\"Two 'x'.\\" 'Three.']")
    ['One.', "Two 'x'.", 'Three.']
    >>> parse_sentences(["a", "b"])
    ['a', 'b']
    """
    if isinstance(value, list):
        return [str(item) for item in value]
    text = str(value).strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError(f"expected a [...] list, got {text[:40]!r}")
    sentences = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING:
            sentences.append(ast.literal_eval(token.string))
        elif token.type not in _LIST_TOKENS and token.string not in "[],":
            raise ValueError(f"expected only string literals in the list, got {token.string!r}")
    return sentences


_LIST_TOKENS = {tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT}


def load(*, name: str, data_root: str, files: Sequence[str], format: str, lang: str,
         fields: Mapping[str, str], corpus: Mapping[str, str], labels: Mapping[str, Mapping[str, str]],
         missing_label: str, vertical: str | None = None, max_rows: int | None = None) -> list[dict]:
    """Load claims and join their evidence with the corpus.

    Args:
        name: dataset name (case id prefix; the config file is conf/dataset/<name>.yaml).
        data_root: folder the `files` and the corpus file are relative to.
        files: claim files (paths or glob patterns).
        format: format of the claim files.
        lang: language of the claims.
        fields: claim-row fields `id`, `claim`, `evidence` (doc id -> annotated sentence sets) and `cited`
            (list of cited doc ids).
        corpus: `file`, `format`, and the corpus fields `id`, `title`, `sentences`.
        labels: upstream evidence label -> {relation, label} (the claim takes the label of its evidence).
        missing_label: the key of `labels` for a claim without evidence.
        vertical: the vertical of every claim.
        max_rows: read at most this many claim rows per file.

    Returns:
        One validated case per claim.
    """
    label_map = LabelMap(name, labels)
    documents = _load_corpus(name, data_root, corpus)
    collector = CaseCollector(name)
    for item in iter_rows(name, data_root, files, format, max_rows):
        claim = get_text(item.row, fields["claim"], item.where, name, "fields.claim")
        annotations = get_field(item.row, fields["evidence"], item.where, name, "fields.evidence") or {}
        cited = get_field(item.row, fields["cited"], item.where, name, "fields.cited") or []
        if not isinstance(annotations, Mapping) or not isinstance(cited, list):
            raise CaseError(item.where, fields["evidence"], "expected {doc_id: [{sentences, label}]} and a list of "
                                                            f"cited ids, got {annotations!r:.60} and {cited!r:.60}")
        raw_labels = {str(group.get("label")) for groups in annotations.values() for group in groups}
        if len(raw_labels) > 1:
            raise CaseError(item.where, fields["evidence"], f"expected one label per claim, got {sorted(raw_labels)}")
        relation, label = label_map(raw_labels.pop() if raw_labels else missing_label, item.where, "label")
        snippets = []
        for doc_id in dict.fromkeys([*map(str, annotations), *map(str, cited)]):
            if doc_id not in documents:
                raise CaseError(item.where, fields["evidence"], f"expected a document of the corpus "
                                                                f"{corpus['file']}, got id {doc_id!r}")
            title, sentences = documents[doc_id].parsed()
            gold = {index for group in annotations.get(doc_id, []) for index in group["sentences"]}
            if gold - set(range(len(sentences))):
                raise CaseError(item.where, fields["evidence"], f"expected sentence indices 0..{len(sentences) - 1} "
                                                                f"of document {doc_id}, got {sorted(gold)}")
            snippets += [Snippet(text, title, evidence=index in gold) for index, text in enumerate(sentences)]
        row_id = get_field(item.row, fields["id"], item.where, name, "fields.id")
        case = build_case(case_id=f"{item.id_prefix}-{row_id}", lang=lang, claim=claim, relation=relation,
                          label=label, snippets=snippets, vertical=vertical)
        collector.add(case, item.where)
    return collector.result()


class _Document:
    """A corpus row whose sentences are parsed on first use (a claim file cites a small part of the corpus)."""

    def __init__(self, where: str, title: str, raw: object, field: str) -> None:
        self.where, self.title, self.raw, self.field = where, title, raw, field
        self._sentences: list[str] | None = None

    def parsed(self) -> tuple[str, list[str]]:
        if self._sentences is None:
            try:
                self._sentences = parse_sentences(self.raw)
            except (ValueError, SyntaxError, tokenize.TokenError) as exc:
                raise CaseError(self.where, self.field, f"expected a list of sentences, got unparsable text: "
                                                        f"{exc}") from None
        return self.title, self._sentences


def _load_corpus(name: str, data_root: str, corpus: Mapping[str, str]) -> dict[str, _Document]:
    """doc id -> document, read once per load."""
    (path,) = resolve_files(name, data_root, [corpus["file"]])
    documents = {}
    for where, row in read_rows(path, corpus["format"]):
        doc_id = str(get_field(row, corpus["id"], where, name, "corpus.id"))
        documents[doc_id] = _Document(where, get_text(row, corpus["title"], where, name, "corpus.title"),
                                      get_field(row, corpus["sentences"], where, name, "corpus.sentences"),
                                      corpus["sentences"])
    return documents
