"""Flat datasets: one row per claim (pointer-only sets) or per claim-evidence pair, in csv / tsv / jsonl / json.

Config (conf/dataset/<name>.yaml): `fields` names the upstream columns (`id`, `claim`, `label`, and `evidence` /
`title`, null when absent); `labels` maps each upstream label to our relation and label. A pair becomes a case
whose claim has that one evidence sentence; a claim without evidence (HoVer, CFEVER: evidence only as ids) becomes
a case with the gold relation and label but no evidence. A claim that appears in several rows stays several
cases: the splitter keeps them in one split.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from factlab.data.loaders.build import CaseCollector, LabelMap, Snippet, build_case, get_field, get_text, iter_rows


def load(*, name: str, data_root: str, files: Sequence[str], format: str, lang: str,
         fields: Mapping[str, str | None], labels: Mapping[str, Mapping[str, str]], vertical: str | None = None,
         skip_labels: Sequence[str] = (), claim_extra: Mapping[str, object] | None = None,
         max_rows: int | None = None, columns: Sequence[str] | None = None) -> list[dict]:
    """Load a flat dataset into cases.

    Args:
        name: dataset name (case id prefix; the config file is conf/dataset/<name>.yaml).
        data_root: folder the `files` are relative to.
        files: file paths or glob patterns under data_root.
        format: jsonl, json (a list of rows), csv or tsv.
        lang: language of the claims.
        fields: upstream field of `id` (null: the row number), `claim`, `label`, `evidence` (null: no evidence
            text) and `title` (null: the dataset name).
        labels: upstream label -> {relation, label}.
        vertical: the vertical of every claim, when the dataset has one domain.
        skip_labels: upstream labels whose rows are dropped (e.g. no annotator agreement).
        claim_extra: constant fields added to every claim (e.g. multi_hop: true).
        max_rows: read at most this many rows per file.
        columns: column names of a csv / tsv without a header line.

    Returns:
        One validated case per kept row.
    """
    label_map = LabelMap(name, labels, skip_labels)
    collector = CaseCollector(name)
    for item in iter_rows(name, data_root, files, format, max_rows, columns):
        raw_label = get_field(item.row, fields["label"], item.where, name, "fields.label")
        mapped = label_map(raw_label, item.where, fields["label"])
        if mapped is None:
            continue
        claim = get_text(item.row, fields["claim"], item.where, name, "fields.claim")
        snippets = []
        if fields["evidence"]:
            title = (get_text(item.row, fields["title"], item.where, name, "fields.title") if fields["title"]
                     else f"{name} evidence")
            snippets.append(Snippet(get_text(item.row, fields["evidence"], item.where, name, "fields.evidence"),
                                    title))
        row_id = get_field(item.row, fields["id"], item.where, name, "fields.id") if fields["id"] else item.number
        case = build_case(case_id=f"{item.id_prefix}-{row_id}", lang=lang, claim=claim, relation=mapped[0],
                          label=mapped[1], snippets=snippets, vertical=vertical, claim_extra=claim_extra)
        collector.add(case, item.where)
    return collector.result()
