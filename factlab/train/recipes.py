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
    checkworthy_task,
    extract_claims_task,
    judge_task,
    paragraph_type_task,
    query_rewrite_task,
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


def search_r1(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """Search-R1 style RL of the search checker through VERL (GPU only); factlab/train/rl/search_r1.py."""
    from factlab.train.rl.search_r1 import search_r1 as run_search_r1

    return _finish(run_search_r1(job, stage, name, headline, **settings), name, headline)


def grpo_search_cpu(job: TrainJob, stage: DictConfig, name: str, headline: str, **settings) -> dict:
    """The same rows, tool and reward through TRL's GRPOTrainer with LoRA on CPU; factlab/train/rl/grpo_cpu.py."""
    from factlab.train.rl.grpo_cpu import grpo_search_cpu as run_grpo

    return _finish(run_grpo(job, stage, name, headline, **settings), name, headline)
