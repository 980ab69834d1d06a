"""Loaders of public datasets, one module per format family; each maps upstream rows into the case schema.

- `flat`: one row per claim or claim-evidence pair (csv / tsv / jsonl / json), field and label mapping.
- `nested`: a claim with a nested evidence list (climate_fever, covidfact, wice, feverous, averitec).
- `corpus_join`: claims whose evidence points into a separate abstract corpus (scifact).
- `case_files`: our own case files (the bundled dataset).
"""
