"""Nested datasets: one row per claim with a list of evidence inside it (climate_fever, covidfact, wice, feverous,
averitec).

The shape of the evidence differs per upstream, so the config names an extractor with `_target_` and
`_partial_: true` (one of the `evidence_*` functions below, with its field names); the extractor returns
`Snippet`s with the upstream evidence label in `relation`, which `evidence_labels` maps to our relations. An
evidence item without its own label inherits the claim's relation (the upstream labels the evidence set).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from factlab.data.errors import CaseError
from factlab.data.loaders.build import (
    CaseCollector,
    LabelMap,
    Snippet,
    build_case,
    config_file,
    get_field,
    get_text,
    iter_rows,
    relation_map,
)

Extractor = Callable[[Mapping, str], list[Snippet]]


def load(*, name: str, data_root: str, files: Sequence[str], format: str, lang: str,
         fields: Mapping[str, str | None], labels: Mapping[str, Mapping[str, str]], evidence: Extractor,
         evidence_labels: Mapping[str, str] | None = None, vertical: str | None = None,
         skip_labels: Sequence[str] = (), claim_extra: Mapping[str, object] | None = None,
         max_rows: int | None = None) -> list[dict]:
    """Load a nested dataset into cases.

    Args:
        name: dataset name (case id prefix; the config file is conf/dataset/<name>.yaml).
        data_root: folder the `files` are relative to.
        files: file paths or glob patterns under data_root.
        format: jsonl or json.
        lang: language of the claims.
        fields: upstream field of `id` (null: the row number), `claim` and `label` (the claim's label).
        labels: upstream claim label -> {relation, label}.
        evidence: extractor `(row, where) -> list[Snippet]`, built by Hydra from the config.
        evidence_labels: upstream evidence label -> relation (for extractors that return per-item labels).
        vertical: the vertical of every claim, when the dataset has one domain.
        skip_labels: upstream claim labels whose rows are dropped.
        claim_extra: constant fields added to every claim.
        max_rows: read at most this many rows per file.

    Returns:
        One validated case per kept row.
    """
    label_map = LabelMap(name, labels, skip_labels)
    item_relations = relation_map(name, evidence_labels or {})
    collector = CaseCollector(name)
    for item in iter_rows(name, data_root, files, format, max_rows):
        mapped = label_map(get_field(item.row, fields["label"], item.where, name, "fields.label"), item.where,
                           fields["label"])
        if mapped is None:
            continue
        claim = get_text(item.row, fields["claim"], item.where, name, "fields.claim")
        snippets = []
        for snippet in evidence(item.row, item.where):
            relation = snippet.relation
            if relation is not None:
                if relation not in item_relations:
                    raise CaseError(item.where, "evidence label", f"unmapped evidence label {relation!r}; mapped: "
                                    f"{', '.join(item_relations) or 'none'}; add it to `evidence_labels` in "
                                    f"{config_file(name)}")
                relation = item_relations[relation]
            snippets.append(Snippet(snippet.text, snippet.title, snippet.url, relation, snippet.evidence))
        row_id = get_field(item.row, fields["id"], item.where, name, "fields.id") if fields["id"] else item.number
        case = build_case(case_id=f"{item.id_prefix}-{row_id}", lang=lang, claim=claim, relation=mapped[0],
                          label=mapped[1], snippets=snippets, vertical=vertical, claim_extra=claim_extra)
        collector.add(case, item.where)
    return collector.result()


def _list(row: Mapping, key: str, where: str) -> list:
    value = row.get(key)
    if not isinstance(value, list):
        raise CaseError(where, key, f"expected a list of evidence, got {type(value).__name__}")
    return value


def _optional(row: Mapping, key: str | None) -> str | None:
    value = row.get(key) if key else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def evidence_records(row: Mapping, where: str, *, field: str, text: str, label: str | None = None,
                     title: str | None = None, url: str | None = None) -> list[Snippet]:
    """Evidence as a list of objects, each with its text and optionally its label, title and url (climate_fever).

    >>> evidence_records({"ev": [{"t": "A b.", "l": "SUPPORTS", "a": "A"}]}, "f", field="ev", text="t", label="l",
    ...                  title="a")
    [Snippet(text='A b.', title='A', url=None, relation='SUPPORTS', evidence=True)]
    """
    snippets = []
    for position, record in enumerate(_list(row, field, where)):
        if not isinstance(record, Mapping) or not isinstance(record.get(text), str):
            raise CaseError(where, f"{field}[{position}].{text}", f"expected an object with a string {text!r}, "
                                                                    f"got {record!r:.80}")
        snippets.append(Snippet(record[text], _optional(record, title) or "", _optional(record, url),
                                str(record[label]) if label and record.get(label) is not None else None))
    return snippets


def evidence_strings(row: Mapping, where: str, *, field: str, title: str | None = None,
                     url: str | None = None) -> list[Snippet]:
    """Evidence as a list of sentences of one source named by row-level `title` / `url` fields (covidfact).

    >>> evidence_strings({"ev": ["One.", "Two."], "u": "https://x.org/a"}, "f", field="ev", url="u")[1]
    Snippet(text='Two.', title='', url='https://x.org/a', relation=None, evidence=True)
    """
    source_title, source_url = _optional(row, title) or "", _optional(row, url)
    snippets = []
    for position, sentence in enumerate(_list(row, field, where)):
        if not isinstance(sentence, str):
            raise CaseError(where, f"{field}[{position}]", f"expected a string, got {sentence!r:.80}")
        snippets.append(Snippet(sentence, source_title, source_url))
    return snippets


def evidence_joined(row: Mapping, where: str, *, field: str, separator: str = " ") -> list[Snippet]:
    """Evidence as a list of sentences that form ONE passage (a WiCE oracle chunk): joined into one snippet.

    >>> evidence_joined({"ev": ["One.", "Two."]}, "f", field="ev")
    [Snippet(text='One. Two.', title='', url=None, relation=None, evidence=True)]
    """
    sentences = _list(row, field, where)
    for position, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise CaseError(where, f"{field}[{position}]", f"expected a string, got {sentence!r:.80}")
    return [Snippet(separator.join(s.strip() for s in sentences if s.strip()), "")]


def evidence_indexed(row: Mapping, where: str, *, field: str, index_field: str,
                     title_prefix: str | None = None) -> list[Snippet]:
    """A whole source as a list of sentences plus the indices of the gold ones (wice: sets of sentence indices).

    Every sentence becomes part of the source; those named in any index set are the evidence. A first sentence
    starting with `title_prefix` is the source's title, not its text.

    >>> [s.evidence for s in evidence_indexed({"s": ["T: Doc", "a.", "b.", "c."], "i": [[1], [1, 3]]}, "f",
    ...                                       field="s", index_field="i", title_prefix="T: ")]
    [True, False, True]
    """
    sentences = _list(row, field, where)
    gold: set[int] = set()
    for group in _list(row, index_field, where):
        for index in group if isinstance(group, list) else [group]:
            if not isinstance(index, int) or not 0 <= index < len(sentences):
                raise CaseError(where, index_field, f"expected sentence indices 0..{len(sentences) - 1}, "
                                                    f"got {index!r}")
            gold.add(index)
    title, start = "", 0
    if title_prefix and sentences and str(sentences[0]).startswith(title_prefix):
        title, start = str(sentences[0])[len(title_prefix):].strip(), 1
    return [Snippet(str(sentences[index]), title, evidence=index in gold) for index in range(start, len(sentences))]


_WIKI_LINK = re.compile(r"\[\[([^\]|]*)\|([^\]]*)\]\]|\[\[([^\]]*)\]\]")


def strip_wiki_links(text: str) -> str:
    """Replace ``[[Target|shown]]`` by ``shown`` and ``[[Target_page]]`` by ``Target page``.

    >>> strip_wiki_links("a [[Radio_station|radio station]] in [[England]]")
    'a radio station in England'
    """
    return _WIKI_LINK.sub(lambda m: m[2] if m[1] is not None else m[3].replace("_", " "), text)


def evidence_lines(row: Mapping, where: str, *, field: str, line_separator: str = "\n",
                   title_separator: str = "\t") -> list[Snippet]:
    """Evidence as one string of ``<title><tab><sentence>`` lines with wiki link markup (feverous).

    >>> evidence_lines({"e": "Odelay\\tIt won a [[Grammy_Award|Grammy]]."}, "f", field="e")
    [Snippet(text='It won a Grammy.', title='Odelay', url=None, relation=None, evidence=True)]
    """
    value = row.get(field)
    if not isinstance(value, str):
        raise CaseError(where, field, f"expected a string of evidence lines, got {type(value).__name__}")
    snippets = []
    for number, line in enumerate(filter(str.strip, value.split(line_separator)), start=1):
        title, separator, sentence = line.partition(title_separator)
        if not separator:
            raise CaseError(where, field, f"expected line {number} as <title>{title_separator!r}<sentence>, "
                                          f"got {line!r:.80}")
        snippets.append(Snippet(strip_wiki_links(sentence), title.strip()))
    return snippets


def evidence_qa(row: Mapping, where: str, *, field: str, question: str, answers: str, answer: str, url: str,
                explanation: str | None = None, answer_type: str | None = None,
                skip_types: Sequence[str] = ()) -> list[Snippet]:
    """Evidence as question-answer pairs, each answer from its own web source (averitec).

    The evidence text is ``Q: <question> A: <answer> <explanation>``; its source is the answer's url, titled by the
    question. Answers whose type is in `skip_types` (e.g. Unanswerable) are left out.

    >>> qa = {"qs": [{"q": "Who?", "as": [{"a": "Bob", "u": "https://x.org", "t": "Extractive"}]}]}
    >>> evidence_qa(qa, "f", field="qs", question="q", answers="as", answer="a", url="u")[0].text
    'Q: Who? A: Bob'
    """
    snippets = []
    for position, item in enumerate(_list(row, field, where)):
        if not isinstance(item, Mapping) or not isinstance(item.get(question), str):
            raise CaseError(where, f"{field}[{position}].{question}", f"expected a question string, got {item!r:.80}")
        for reply in _list(item, answers, f"{where} {field}[{position}]"):
            if not isinstance(reply, Mapping):
                raise CaseError(where, f"{field}[{position}].{answers}", f"expected answer objects, got {reply!r:.80}")
            if answer_type and reply.get(answer_type) in skip_types:
                continue
            words = [f"Q: {item[question].strip()}", f"A: {str(reply.get(answer, '')).strip()}",
                     _optional(reply, explanation) or ""]
            snippets.append(Snippet(" ".join(filter(None, words)), item[question].strip(), _optional(reply, url)))
    return snippets
