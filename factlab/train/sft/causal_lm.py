"""Distil a generative stage (query_rewrite, extract_claims) into a small causal LM: TRL SFTTrainer, LoRA by config.

The training prompts are exactly what the stage program sends when the model serves as its LM: the stage
predictor's signature rendered by the LM config's DSPy adapter (conf/lm/<base_lm>.yaml: `adapter`), with the
teacher's output as the assistant answer in that adapter's format. So the exported model drops into
`lm@student=...` without a prompt mismatch.

Work folder: `checkpoints/` (resumed), `model/` (merged weights + tokenizer + `factlab_causal_lm.json`), with LoRA
`adapter/` (the PEFT adapter alone), `test_predictions.jsonl`, `metrics.json`, and `serve_overrides.txt` for a GGUF
base: with LoRA the adapter is served next to the base GGUF (`student.lora=<work>/adapter`, factlab/models/lora.py: a
few MB that can ship), without it the merged model is written as GGUF in the model cache (~0.5 GB for the 0.5B).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from factlab.train.job import FineTuneSettings, RecipeConfigError, TrainJob, announce_precision, settings_from_yaml
from factlab.train.tasks import Row, SFTTask
from factlab.train.teacher import label_splits

META_FILE = "factlab_causal_lm.json"


@dataclass(kw_only=True)
class CausalLMSettings(FineTuneSettings):
    """The settings of an sft_* recipe (conf/recipe/base/causal_lm.yaml documents each)."""

    base_lm: dict
    base_model: str | None
    gradient_accumulation: int
    max_new_tokens: int
    export_gguf: bool
    eval_base: bool
    undigested: list = field(default_factory=list)  # keys that only decide when an invocation stops (train/job.py)


def sft_settings_from(recipe: str, values: dict) -> CausalLMSettings:
    """CausalLMSettings from a recipe's keyword values, naming the yaml on an unknown or missing field."""
    return settings_from_yaml(CausalLMSettings, recipe, values)


@dataclass
class Prompter:
    """Renders a stage's predictor calls as chat messages with the serving LM's DSPy adapter, and parses answers."""

    signature: type
    adapter: object
    output_field: str
    extra_inputs: dict

    @classmethod
    def for_stage(cls, stage_cfg: DictConfig, adapter_cfg: DictConfig, task: SFTTask) -> Prompter:
        from hydra.utils import instantiate

        program = instantiate(stage_cfg.program)
        predictors = program.named_predictors()
        if len(predictors) != 1:
            raise RecipeConfigError(f"stage {stage_cfg.name!r}: SFT needs a program with one predictor, got "
                                    f"{[name for name, _ in predictors]}")
        signature = predictors[0][1].signature
        extra = {k: getattr(program, k) for k in signature.input_fields if k not in task.input_fields}
        return cls(signature, instantiate(adapter_cfg), task.output_field, extra)

    def messages(self, inputs: dict) -> list[dict]:
        return self.adapter.format(self.signature, demos=[], inputs={**inputs, **self.extra_inputs})

    def answer(self, target: list[str]) -> str:
        return self.adapter.format_assistant_message_content(self.signature, {self.output_field: target})

    def parse(self, completion: str):
        import dspy

        try:
            return dspy.Prediction(**self.adapter.parse(self.signature, completion)), None
        except Exception as exc:  # the adapter raises AdapterParseError and friends on malformed answers
            return dspy.Prediction(**{self.output_field: []}), f"{type(exc).__name__}: {str(exc)[:200]}"


def train_causal_lm(task: SFTTask, stage_cfg: DictConfig, job: TrainJob, settings: CausalLMSettings,
                    recipe: str) -> dict:
    """Label, fine-tune (resumable), merge, evaluate on test with the stage's scoring core, export, register.

    Returns:
        `test/score` (mean of the stage's `metric`), `test/parse_rate`, agreement with the teacher, throughput,
        model facts, `model_uri`, and `gguf` / `serve_overrides` when exported.
    """
    prompter = Prompter.for_stage(stage_cfg, OmegaConf.create(settings.base_lm["adapter"]), task)
    announce_precision(job, settings)
    data = label_splits(job, stage_cfg, task.rows, task.target, lambda t: t or None, settings.max_rows,
                        "exact_agreement_with_gold")
    model_dir = job.work_dir / "model"
    if not (model_dir / "COMPLETE").exists():
        _fit(task, prompter, data, job, settings, model_dir, recipe)
    result = _evaluate(task, prompter, data["test"], job, settings, model_dir)
    if settings.eval_base:
        result.update(_paired_with_base(task, prompter, data["test"], job, settings))
    if settings.export_gguf and not settings.base_model:
        result.update(_export(settings, model_dir, job))
    from factlab.train.registry import register_model

    job.tracker.log_metrics({k: v for k, v in result.items() if isinstance(v, int | float)})
    uri = register_model(job.tracker, model_dir, job.registered_name,
                         {"stage": task.stage, "test/score": f"{result['test/score']:.4f}"})
    return {**result, "model_uri": uri, "model_dir": str(model_dir.resolve()), "settings": asdict(settings)}


def base_model_path(settings: CausalLMSettings) -> Path:
    """The Hugging Face folder to fine-tune: `base_model` if set, else `base_lm`'s GGUF converted once."""
    from factlab.runtime import resolve_base_model
    from factlab.train.gguf import hf_from_gguf

    return resolve_base_model(settings.base_model) if settings.base_model else hf_from_gguf(settings.base_lm)


def _fit(task: SFTTask, prompter: Prompter, data: dict, job: TrainJob, settings: CausalLMSettings,
         model_dir: Path, recipe: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    from datasets import Dataset
    from factlab.train.gguf import check_round_trip
    from factlab.train.trainer_support import shared_callbacks, shared_training_args, train_resumably, with_peft

    def examples(split: str) -> list[dict]:
        rows, targets = data[split]
        return [{"prompt": prompter.messages(row.inputs),
                 "completion": [{"role": "assistant", "content": prompter.answer(target)}]}
                for row, target in zip(rows, targets, strict=True) if target]

    train, val = examples("train"), examples("val")
    if not train:
        raise RecipeConfigError(f"{recipe}: no training rows with a teacher target for stage {task.stage!r}; check "
                                "the dataset has that gold (or use teacher=lm) and recipe.max_rows.train")
    base = base_model_path(settings)
    set_seed(job.seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    check_round_trip(tokenizer, source=f"tokenizer of {base}")
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    model = with_peft(model, settings.peft, "CAUSAL_LM")
    checkpoints = job.work_dir / "checkpoints"
    has_val = bool(val)
    args = SFTConfig(**shared_training_args(settings, job, checkpoints, has_val, "eval_loss", False),
                     max_length=settings.max_length, per_device_eval_batch_size=settings.batch_size,
                     gradient_accumulation_steps=settings.gradient_accumulation, completion_only_loss=True,
                     dataset_num_proc=None)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(train),
                         eval_dataset=Dataset.from_list(val) if has_val else None, processing_class=tokenizer,
                         callbacks=shared_callbacks(settings, job, has_val))
    trained, last, seconds = train_resumably(trainer, checkpoints, job, settings, adapter_dir=job.work_dir / "adapter")
    trained.to(torch.bfloat16 if settings.bf16 else torch.float32).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    meta = {"stage": task.stage, "recipe": recipe, "base": str(base), "base_lm": settings.base_lm.get("name"),
            "peft": settings.peft, "teacher": job.teacher.describe(), "dataset": job.dataset,
            "train_rows": len(train), "steps": trainer.state.global_step, "best_val_loss": trainer.state.best_metric,
            "train_seconds": seconds, "resumed_from": last, "adapter": settings.base_lm["adapter"]}
    (model_dir / META_FILE).write_text(json.dumps(meta, ensure_ascii=False, indent=2, default=str))
    (model_dir / "COMPLETE").write_text(str(trainer.state.global_step))


def generate(model_dir: Path, conversations: Sequence[list[dict]], max_new_tokens: int, bf16: bool,
             batch_size: int = 4) -> tuple[list[str], float, int]:
    """Greedy answers of the saved model to chat prompts; returns them, items/s and generated tokens."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    # bfloat16 weights, not autocast: autocast would re-cast every weight at every generated token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16 if bf16 else torch.float32).eval()
    answers, tokens = [], 0
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(conversations), batch_size):
            texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                     for c in conversations[i:i + batch_size]]
            batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
            out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id)
            new = out[:, batch["input_ids"].shape[1]:]
            tokens += int((new != tokenizer.pad_token_id).sum())
            answers += tokenizer.batch_decode(new, skip_special_tokens=True)
    seconds = time.perf_counter() - start
    return answers, (len(conversations) / seconds if seconds > 0 else 0.0), tokens


def _evaluate(task: SFTTask, prompter: Prompter, test: tuple[list[Row], list], job: TrainJob,
              settings: CausalLMSettings, model_dir: Path) -> dict:
    import importlib

    from factlab.train.registry import folder_size_bytes, parameter_count

    rows, targets = test
    metric = importlib.import_module(f"factlab.programs.{task.stage}").metric  # the stage's own definition of right
    meta = json.loads((model_dir / META_FILE).read_text())
    answers, items_per_s, tokens = _cached_answers(job.work_dir, model_dir, rows, settings.max_new_tokens)
    if answers is None:  # a rerun of a finished fit reads them back instead of generating again (~10 min on CPU)
        answers, items_per_s, tokens = generate(model_dir, [prompter.messages(r.inputs) for r in rows],
                                                settings.max_new_tokens, settings.bf16)
    predictions, scores, parsed, same = [], [], 0, []
    for row, target, answer in zip(rows, targets, answers, strict=True):
        pred, error = prompter.parse(answer)
        got = [v for v in (getattr(pred, task.output_field, None) or []) if isinstance(v, str)]
        parsed += error is None
        score = metric(row.meta["example"], pred).score
        scores.append(score)
        same.append(None if not target else float(got == list(target)))
        predictions.append({"inputs": row.inputs, "answer": answer, "parsed": got, "error": error, "score": score,
                            "teacher": target, "gold": row.gold, "lang": row.lang, "case_id": row.case_id})
    n = len(rows)
    compared = [s for s in same if s is not None]
    metrics = {
        "test/score": sum(scores) / n if n else 0.0, "test/n": n, "test/parse_rate": parsed / n if n else 0.0,
        "test/exact_agreement_with_teacher": sum(compared) / len(compared) if compared else None,
        "test/items_per_s": items_per_s, "test/batch_size": 4, "test/generated_tokens": tokens,
        "train/wall_s": meta["train_seconds"], "train/rows": meta["train_rows"], "train/steps": meta["steps"],
        "model/parameters": parameter_count(model_dir), "model/size_mb": folder_size_bytes(model_dir) / 2**20,
    }
    job.tracker.log_table(predictions, "test/predictions.jsonl")
    (job.work_dir / "test_predictions.jsonl").write_text(
        "".join(json.dumps(p, ensure_ascii=False, default=str) + "\n" for p in predictions))
    (job.work_dir / "metrics.json").write_text(json.dumps(metrics, indent=2))
    (job.work_dir / _STAMP).write_text(_model_stamp(model_dir, settings.max_new_tokens))
    return metrics


_STAMP = "test_predictions.model"  # which model (and answer length) wrote test_predictions.jsonl


def _model_stamp(model_dir: Path, max_new_tokens: int) -> str:
    weights = sorted(model_dir.glob("*.safetensors"))
    return json.dumps({"weights": [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in weights],
                       "max_new_tokens": max_new_tokens}, sort_keys=True)


def _cached_answers(work_dir: Path, model_dir: Path, rows: Sequence[Row], max_new_tokens: int):
    """The answers `_evaluate` wrote for these rows with this model, or (None, 0, 0): a different model file, answer
    length or test rows (case ids in order) regenerate."""
    path, stamp, metrics = work_dir / "test_predictions.jsonl", work_dir / _STAMP, work_dir / "metrics.json"
    if not (path.exists() and stamp.exists()) or stamp.read_text() != _model_stamp(model_dir, max_new_tokens):
        return None, 0.0, 0
    cached = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if [c.get("case_id") for c in cached] != [r.case_id for r in rows]:
        return None, 0.0, 0
    old = json.loads(metrics.read_text()) if metrics.exists() else {}
    return [c["answer"] for c in cached], old.get("test/items_per_s", 0.0), old.get("test/generated_tokens", 0)


def _paired_with_base(task: SFTTask, prompter: Prompter, test: tuple[list[Row], list], job: TrainJob,
                      settings: CausalLMSettings) -> dict:
    """The untrained base on the same test rows, generated and scored the same way: `base/test/score` and the
    trained model's paired gain with its bootstrap interval (rows of one case resampled together). Cached in
    `<work>/base_test_predictions.jsonl`, so a rerun does not generate again."""
    import importlib
    from collections import defaultdict

    from factlab.metrics import paired_gain

    rows, _ = test
    metric = importlib.import_module(f"factlab.programs.{task.stage}").metric
    cache = job.work_dir / "base_test_predictions.jsonl"
    if cache.exists():
        answers = [json.loads(line)["answer"] for line in cache.read_text(encoding="utf-8").splitlines()]
    else:
        answers, _, _ = generate(base_model_path(settings), [prompter.messages(r.inputs) for r in rows],
                                 settings.max_new_tokens, settings.bf16)
        cache.write_text("".join(json.dumps({"case_id": r.case_id, "answer": a}, ensure_ascii=False) + "\n"
                                 for r, a in zip(rows, answers, strict=True)), encoding="utf-8")
    trained = [json.loads(line)["score"]
               for line in (job.work_dir / "test_predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    base = [metric(row.meta["example"], prompter.parse(answer)[0]).score for row, answer in zip(rows, answers,
                                                                                                 strict=True)]
    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row, a, b in zip(rows, base, trained, strict=True):
        groups[f"{row.lang}/{row.case_id}"].append((a, b))
    gain, interval = paired_gain(list(groups.values()), 1000, job.seed, 0.95)
    out = {"base/test/score": sum(base) / len(base) if base else 0.0, "test/paired_gain_over_base": gain}
    if interval:
        out["test/paired_gain_low"], out["test/paired_gain_high"] = interval
    for lang in sorted({row.lang for row in rows}):
        pairs = [(a, b) for row, a, b in zip(rows, base, trained, strict=True) if row.lang == lang]
        out[f"test/{lang}/score"] = sum(b for _, b in pairs) / len(pairs)
        out[f"base/test/{lang}/score"] = sum(a for a, _ in pairs) / len(pairs)
    (job.work_dir / "metrics.json").write_text(json.dumps(
        {**json.loads((job.work_dir / "metrics.json").read_text()), **out}, indent=2))
    return out


def _export(settings: CausalLMSettings, model_dir: Path, job: TrainJob) -> dict:
    """The overrides that serve the trained model as a stage's LM: the LoRA adapter next to the base GGUF when LoRA
    was on (the adapter GGUF written once into the model cache), else the merged model as a GGUF of its own."""
    from factlab.models.assemble import assemble, default_cache_dir
    from factlab.models.lora import lora_gguf
    from factlab.train.gguf import export_gguf

    lm = settings.base_lm
    template = assemble(list(lm["packages"]), lm["filename"], lm["sha256"])
    adapter = job.work_dir / "adapter"
    if (adapter / "adapter_model.safetensors").exists():
        path = lora_gguf(adapter.resolve(), template)
        overrides = f"student.lora={adapter.resolve()}"
        (job.work_dir / "serve_overrides.txt").write_text(overrides + "\n")
        return {"lora_gguf": str(path), "adapter": str(adapter.resolve()), "serve_overrides": overrides,
                "model/adapter_size_mb": path.stat().st_size / 2**20}
    name = f"{job.registered_name}-{job.work_dir.name}"
    path = default_cache_dir() / f"{name}.gguf"
    if not path.with_suffix(".gguf.sha256").exists():
        export_gguf(model_dir, template, path, name)
    sha = path.with_suffix(".gguf.sha256").read_text().strip()
    overrides = " ".join([f"student.name={name}", f"student.alias={name}", "student.packages=[]",
                          f"student.filename={path.name}", f"student.sha256={sha}"])
    (job.work_dir / "serve_overrides.txt").write_text(overrides + "\n")
    return {"gguf": str(path), "serve_overrides": overrides, "model/gguf_size_mb": path.stat().st_size / 2**20}
