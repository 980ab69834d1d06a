"""What both RL recipes (search_r1 on VERL, grpo_search_cpu on TRL) set up the same way: the RL parquet rows of the
job's splits, the retrievers of their corpus, and the base model folder."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from omegaconf import DictConfig

from factlab.train.job import TrainJob

logger = logging.getLogger(__name__)


def write_job_data(job: TrainJob, multi_hop_only: bool, max_rows: Mapping[str, int | None],
                   row_sample: str) -> dict:
    """The job's train / val / test cases as VERL parquet under `<work_dir>/data` (factlab/train/rl/data.py); a
    capped split keeps a sample seeded by the job's seed (`row_sample: seeded`) or its first rows (`first`).

    Returns:
        The manifest (files, rows, corpus key and folder).
    """
    from factlab.train.rl.data import write_rl_data

    manifest = write_rl_data(job.splits, job.dataset or "dataset", job.work_dir / "data",
                             multi_hop_only=multi_hop_only, max_rows=dict(max_rows), row_sample=row_sample,
                             seed=job.seed)
    logger.info("RL rows %s, corpus %s", manifest["rows"], manifest["corpus"])
    return manifest


def job_retrievers(manifest: Mapping, retrieval: DictConfig, work_dir: Path, encoder=None) -> dict:
    """Corpus key -> Retriever over the manifest's corpus (index cached under `<work_dir>/index`)."""
    from factlab.train.rl.retrieval import open_retrievers

    return open_retrievers({manifest["corpus"]: manifest["corpus_dir"]}, work_dir / "index", retrieval,
                           encoder=encoder)


def base_model_folder(base_model: str | None, base_lm: Mapping) -> Path:
    """`base_model` when given (a Hugging Face folder or `pkg://module`), else `base_lm`'s GGUF converted once."""
    if base_model:
        from factlab.runtime import resolve_base_model

        return resolve_base_model(str(base_model))
    from factlab.train.gguf import hf_from_gguf

    return hf_from_gguf(base_lm)
