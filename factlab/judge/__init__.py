"""The relation judge that ships in the repo, and the small heads beside it.

- `pairs`: claim-evidence pairs from the public sets (readers, label mapping, dedup against target sets).
- `model`: the judge network (e5-small + LoRA + head), its saved form (adapter + `judge.json`) and `Judge` (windows,
  calibration, the support decision).
- `train`: the long run (`python train.py recipe=judge_e5`), resumable, with the pilot gate and the val curve.
- `baseline`: the lexical baseline the pilot must beat.
- `heads`: check-worthiness / vertical / paragraph type as linear heads on frozen e5 embeddings.
- `__main__`: `python -m factlab.judge --input pairs.jsonl --output scored.jsonl [--model ...]`.
"""

DEFAULT_JUDGE = "factlab:judge-e5s-v1"
