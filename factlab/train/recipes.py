"""The recipes of `python train.py recipe=<name>`: one function per conf/recipe/<name>.yaml (a test checks the pairing
both ways). Each gets the TrainJob from train.py, its stage config (composed into the recipe) and its settings.

    python train.py recipe=distill_judge                       # claim + evidence -> relation, on MiniLM
    python train.py recipe=distill_checkworthy teacher=lm      # labels from the stage program on the teacher LM
    python train.py recipe=sft_query_rewrite                   # LoRA SFT of a small causal LM
"""

from __future__ import annotations

from omegaconf import DictConfig

from factlab.train.distill.classifier import settings_from, train_classifier
from factlab.train.job import TrainJob
from factlab.train.tasks import (
    causal_strength_task,
    checkworthy_task,
    extract_claims_task,
    judge_task,
    paragraph_type_task,
    query_rewrite_task,
    scope_task,
    vertical_task,
)


def _finish(result: dict, name: str, headline: str) -> dict:
    if headline not in result:
        raise KeyError(f"conf/recipe/{name}.yaml: headline {headline!r} is not a result; expected one of "
                       f"{', '.join(k for k in result if k.startswith('test/'))}")
    return {**result, "recipe": name, "headline": result[headline]}


def distill_judge(job: TrainJob, stage: DictConfig, name: str, headline: str, row_kinds: list[str],
                  **settings) -> dict:
    """Claim + one evidence snippet -> relation (5 classes); the plugged-back judge aggregates snippets."""
    result = train_classifier(judge_task(row_kinds), stage, job, settings_from(name, settings), name)
    return _finish(result, name, headline)


def distill_checkworthy(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Sentence -> checkworthy / not_checkworthy."""
    result = train_classifier(checkworthy_task(), stage, job, settings_from(name, settings), name)
    return _finish(result, name, headline)


def distill_vertical(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Claim -> one of the stage's configured verticals."""
    task = vertical_task(list(stage.program.verticals))
    return _finish(train_classifier(task, stage, job, settings_from(name, settings), name), name, headline)


def distill_paragraph_type(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Paragraph -> its role (background / method / results / limitations), the routing table's key."""
    task = paragraph_type_task()
    return _finish(train_classifier(task, stage, job, settings_from(name, settings), name), name, headline)


def sft_query_rewrite(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Claim -> JSON list of search queries, LoRA SFT of a small causal LM."""
    from factlab.train.sft.causal_lm import sft_settings_from, train_causal_lm

    task = query_rewrite_task(stage.program.max_queries)
    result = train_causal_lm(task, stage, job, sft_settings_from(name, settings), name)
    return _finish(result, name, headline)


def sft_extract_claims(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Paragraph -> JSON list of atomic claims, LoRA SFT of a small causal LM."""
    from factlab.train.sft.causal_lm import sft_settings_from, train_causal_lm

    result = train_causal_lm(extract_claims_task(), stage, job, sft_settings_from(name, settings), name)
    return _finish(result, name, headline)


def judge_e5(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """The shipped relation judge: e5-small + LoRA + head on every public pair set; factlab/judge/train.py."""
    from factlab.judge.train import JudgeSettings, train_judge
    from factlab.train.job import settings_from_yaml

    result = train_judge(job, settings_from_yaml(JudgeSettings, name, settings), name)
    return {**result, "recipe": name, "headline": result.get(headline, float("nan"))}


def _head(job: TrainJob, task, name: str, headline: str, base_model: str, max_length: int,
          l2_grid: list[float]) -> dict:
    """A stage head on frozen e5 embeddings (factlab/judge/heads.py), measured on the job's test split."""
    from factlab.judge.heads import train_head

    splits = {split: [(row.text, row.gold, row.lang) for row in task.rows(cases)]
              for split, cases in job.splits.items()}
    result = train_head(task.stage, task.labels, splits, job.work_dir, base_model, max_length, list(l2_grid), job.seed,
                        name)
    job.tracker.log_dict(result, "head_result.json")
    result = {**result, **{f"test/{k[5:]}": v for k, v in result.items() if k.startswith("test_")}}
    job.tracker.log_metrics({k: v for k, v in result.items() if k.startswith("test/") and isinstance(v, float)})
    return {**result, "recipe": name, "headline": result.get(headline, float("nan"))}


def head_checkworthy(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Sentence -> checkworthy / not_checkworthy, a linear head on frozen e5 (shipped: factlab:checkworthy-e5s-v1)."""
    return _head(job, checkworthy_task(), name, headline, **settings)


def head_vertical(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Claim -> vertical, a linear head on frozen e5 (shipped: factlab:vertical-e5s-v1)."""
    return _head(job, vertical_task(list(stage.program.verticals)), name, headline, **settings)


def head_paragraph_type(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Paragraph -> its role, a linear head on frozen e5 (shipped: factlab:paragraph-type-e5s-v1)."""
    return _head(job, paragraph_type_task(), name, headline, **settings)


def head_causal_strength(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Sentence -> causal strength, a linear head on frozen e5 (shipped: factlab:causal-strength-e5s-v1)."""
    return _head(job, causal_strength_task(), name, headline, **settings)


def head_scope(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Sentence -> scope (none / lab / restricted / general), a linear head on frozen e5 (shipped:
    factlab:scope-e5s-v1)."""
    return _head(job, scope_task(), name, headline, **settings)


def search_r1(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Search-R1 style RL of the search checker through VERL (GPU only); factlab/train/rl/search_r1.py."""
    from factlab.train.rl.search_r1 import search_r1 as run_search_r1

    return _finish(run_search_r1(job, stage, name, headline, **settings), name, headline)


def grpo_search_cpu(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """The same rows, tool and reward through TRL's GRPOTrainer with LoRA on CPU; factlab/train/rl/grpo_cpu.py."""
    from factlab.train.rl.grpo_cpu import grpo_search_cpu as run_grpo

    return _finish(run_grpo(job, stage, name, headline, **settings), name, headline)
