"""The long run of the relation judge (`python train.py recipe=judge_e5`; settings in conf/recipe/judge_e5.yaml).

What it does, in order:
1. Reads every training set and target set of the recipe (`factlab.judge.pairs`), drops repeats and training pairs
   whose premise is a target's (the premise-overlap report, `overlap.json`), holds out a seeded val split of the
   training mix per language (calibration and model selection read only it), adds the bundled train split's relation
   pairs and their contrastive edits.
2. Fits the lexical baseline (`factlab.judge.baseline`) on training pairs and scores it on the val sets.
3. Trains LoRA + head. Every batch is half English, half Chinese; `pool_batches` batches are drawn together,
   tokenised once (the first window of each pair, as serving reads it) and sorted by length so padding is short. The
   draw is a pure function of (seed, pool index), so a resumed run sees the data it would have seen. A share of each
   batch pairs a claim with another pair's evidence (irrelevant / insufficient) or applies a contrastive edit to an
   entailed pair (`factlab.data.contrastive`: number, unit, negation, entity -> contradict; qualifiers -> partial).
4. Every `eval_every` steps: accuracy on `eval_rows` rows of each val set (the pilot sets, OCNLI dev, the mix's own
   val split per language) to MLflow and `curve.jsonl`; a checkpoint (adapter + optimizer + step, atomic); the
   pilot gate at `pilot_steps` (beat the baseline by `pilot_margin` on `pilot_sets` or stop, saying so); plateau.
5. At the end (total steps, plateau, or the stretch's minutes): the best adapter by mix-val accuracy, calibrated
   (temperature and support threshold on the mix's val split), into `<work_dir>/model` with `judge.json`.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from factlab.data.jsonl import read_jsonl
from factlab.judge.model import (
    build_net,
    decisive,
    encode_windows,
    load_trained_state,
    pad_batch,
    save_adapter,
    trained_state,
    window_logits,
)
from factlab.judge.pairs import NLI3, Pair, dedupe, premise_key, read_set
from factlab.models.assemble import sha256_file
from factlab.schema import RELATIONS

logger = logging.getLogger(__name__)


@dataclass(kw_only=True)
class JudgeSettings:
    """conf/recipe/judge_e5.yaml documents each field."""

    data_root: str
    base_model: str
    max_length: int
    window_stride: int
    lora: dict
    batch_size: int
    learning_rate: float
    head_learning_rate: float
    weight_decay: float
    warmup_steps: int
    total_steps: int
    pool_batches: int
    eval_every: int
    eval_rows: int
    checkpoint_minutes: float
    stretch_minutes: float
    pilot_steps: int
    pilot_margin: float
    pilot_sets: list
    plateau: float
    shuffle_share: float
    edit_share: float
    bundled_weight: float
    sets: dict
    targets: dict
    keep_target_premises: list = field(default_factory=list)
    undigested: list = field(default_factory=list)
    val_per_lang: int = 1500
    init_from: str | None = None  # an adapter folder (judge.json + adapter.safetensors) a fresh run starts from
    pool_offset: int = 0  # the first pool drawn (a continuation starts past the pools its first stretch saw)


# -- data --------------------------------------------------------------------------------------------------------
def bundled_pairs(cases: list[dict]) -> list[Pair]:
    """The relation pairs of bundled cases and of their contrastive edits."""
    from factlab.data.contrastive import contrastive_cases
    from factlab.data.views import relation_pairs

    pairs = []
    for source, group in (("bundled", cases), ("bundled_edits", contrastive_cases(cases))):
        for row in relation_pairs(group):
            if row.get("relation") in RELATIONS and row["evidence"].strip():
                pairs.append(Pair(row["claim"], row["evidence"], (row["relation"],), row["lang"], source))
    return pairs


def load_mix(settings: JudgeSettings, bundled: list[Pair], seed: int):
    """(train pairs by language, weights by language, val pairs by language, target pairs by set, report)."""
    targets = {name: read_set(name, spec, settings.data_root) for name, spec in settings.targets.items()}
    drop = {premise_key(p.evidence) for name, pairs in targets.items() if name not in settings.keep_target_premises
            for p in pairs}
    raw = [p for name, spec in settings.sets.items() for p in read_set(name, spec, settings.data_root)]
    counts_raw = _count(raw)
    kept, dropped = dedupe(raw + bundled, drop)
    import numpy as np

    rng = np.random.default_rng(seed)
    by_lang: dict[str, list[Pair]] = {"en": [], "zh": []}
    for pair in kept:
        by_lang[pair.lang].append(pair)
    val: dict[str, list[Pair]] = {}
    for lang, pairs in by_lang.items():
        # the val split is drawn with the sampling weights, so it looks like what training sees
        upstream = [i for i, p in enumerate(pairs) if not p.source.startswith("bundled")]
        w = np.asarray([_weight(settings, pairs[i].source) for i in upstream])
        chosen = rng.choice(len(upstream), size=min(settings.val_per_lang, len(upstream)), replace=False, p=w / w.sum())
        held = {upstream[i] for i in chosen}
        val[lang] = [pairs[i] for i in sorted(held)]
        rng.shuffle(val[lang])
        by_lang[lang] = [p for i, p in enumerate(pairs) if i not in held]
    weights = {lang: [_weight(settings, p.source) for p in pairs] for lang, pairs in by_lang.items()}
    ocnli_overlap = _overlap(targets.get("ocnli_dev", []), raw)
    report = {"raw": counts_raw, "dropped": dropped, "train": _count(by_lang["en"] + by_lang["zh"]),
              "val": _count(val["en"] + val["zh"]), "targets": {k: len(v) for k, v in targets.items()},
              "kept_target_premises": {"ocnli_dev": ocnli_overlap},
              "sampling_share": {lang: _shares(by_lang[lang], weights[lang]) for lang in by_lang}}
    return by_lang, weights, val, targets, report


def _weight(settings: JudgeSettings, source: str) -> float:
    if source.startswith("bundled"):
        return settings.bundled_weight
    return float(settings.sets[source].get("weight", 1.0))


def _count(pairs: list[Pair]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in pairs:
        out[p.source] = out.get(p.source, 0) + 1
    return dict(sorted(out.items()))


def _shares(pairs: list[Pair], weights: list[float]) -> dict[str, float]:
    total = sum(weights) or 1.0
    out: dict[str, float] = {}
    for p, w in zip(pairs, weights, strict=True):
        out[p.source] = out.get(p.source, 0.0) + w / total
    return {k: round(v, 4) for k, v in sorted(out.items())}


def _overlap(target: list[Pair], train: list[Pair]) -> dict[str, int]:
    premises = {premise_key(p.evidence) for p in target}
    shared = {key for key in map(premise_key, (p.evidence for p in train)) if key in premises}
    return {"target_premises": len(premises), "shared_with_training": len(shared)}


# -- the batch sampler -------------------------------------------------------------------------------------------
class Sampler:
    """Batches as a pure function of (seed, pool index): `pool_batches` batches drawn, tokenised and length-sorted
    together, half of each batch per language."""

    def __init__(self, settings: JudgeSettings, tokenizer, by_lang, weights, seed: int) -> None:
        import numpy as np

        self.s, self.tokenizer, self.seed = settings, tokenizer, seed
        self.pairs = by_lang
        self.cumulative = {lang: np.cumsum(np.asarray(w, dtype=np.float64)) for lang, w in weights.items()}
        self.supported = {lang: [i for i, p in enumerate(pairs) if p.relations == ("support",)]
                          for lang, pairs in by_lang.items()}
        self._cache: tuple[int, list] | None = None

    def _draw(self, rng: random.Random, lang: str) -> Pair:
        from bisect import bisect_right

        from factlab.data.contrastive import edits

        pairs, roll = self.pairs[lang], rng.random()
        if roll < self.s.shuffle_share:
            a, b = rng.randrange(len(pairs)), rng.randrange(len(pairs))
            return Pair(pairs[a].claim, pairs[b].evidence, ("irrelevant", "insufficient"), lang, "shuffled", "shuffle")
        if roll < self.s.shuffle_share + self.s.edit_share:
            for _ in range(20):
                base = pairs[rng.choice(self.supported[lang])]
                options = edits(base.claim, base.evidence)
                if options:
                    edit = rng.choice(options)
                    return Pair(edit.claim, base.evidence, (edit.relation,), lang, "edits", edit.family)
        cumulative = self.cumulative[lang]
        return pairs[min(len(pairs) - 1, bisect_right(cumulative, rng.random() * cumulative[-1]))]

    def pool(self, index: int) -> list[tuple[list[list[int]], list[list[int]]]]:
        """The batches of pool `index`: (token ids per row, relation mask per row)."""
        if self._cache and self._cache[0] == index:
            return self._cache[1]
        rng = random.Random(f"{self.seed}/{index}")
        half = self.s.batch_size // 2
        sides = {}
        for lang in ("en", "zh"):
            drawn = [self._draw(rng, lang) for _ in range(half * self.s.pool_batches)]
            ids = [w[0] for w in encode_windows(self.tokenizer, [p.claim for p in drawn], [p.evidence for p in drawn],
                                                self.s.max_length, 0)]
            rows = sorted(zip(ids, [p.mask() for p in drawn], strict=True), key=lambda r: len(r[0]))
            sides[lang] = rows
        batches = []
        for b in range(self.s.pool_batches):
            rows = sides["en"][b * half:(b + 1) * half] + sides["zh"][b * half:(b + 1) * half]
            batches.append(([r[0] for r in rows], [r[1] for r in rows]))
        rng.shuffle(batches)
        self._cache = (index, batches)
        return batches

    def batch(self, step: int):
        return self.pool(self.s.pool_offset + step // self.s.pool_batches)[step % self.s.pool_batches]


# -- evaluation --------------------------------------------------------------------------------------------------
def predict_relations(net, tokenizer, pairs: list[Pair], max_length: int, stride: int, batch_size: int = 64):
    """Raw window logits per pair, read as serving reads them (`factlab.judge.model.window_logits`)."""
    return window_logits(net, tokenizer, [p.claim for p in pairs], [p.evidence for p in pairs], max_length, stride,
                         batch_size)


def accuracy(pairs: list[Pair], logits) -> float:
    """Share of pairs whose argmax relation is allowed by their label; on 3-way NLI rows the argmax is read as NLI
    (support / contradict / anything else = neutral)."""
    hits = 0
    for pair, windows in zip(pairs, logits, strict=True):
        probs = decisive(windows)
        best = RELATIONS[max(range(len(probs)), key=probs.__getitem__)]
        if pair.relations in (("support",), ("contradict",), ("insufficient",)):
            hits += NLI3.get(best, "neutral") == NLI3.get(pair.relations[0], "neutral")
        else:
            hits += best in pair.relations
    return hits / max(1, len(pairs))


# -- training ----------------------------------------------------------------------------------------------------
def _schedule(settings: JudgeSettings):
    def factor(step: int) -> float:
        if step < settings.warmup_steps:
            return (step + 1) / settings.warmup_steps
        return max(0.0, (settings.total_steps - step) / max(1, settings.total_steps - settings.warmup_steps))

    return factor


def _set_loss(logits, masks):
    """-log P(the label's set of relations)."""
    import torch

    blocked = logits.masked_fill(masks == 0, float("-inf"))
    return (torch.logsumexp(logits, dim=1) - torch.logsumexp(blocked, dim=1)).mean()


def _save_checkpoint(path: Path, net, optimizer, scheduler, state: dict) -> None:
    import io

    import torch

    from factlab.atomic import atomic_writer

    buffer = io.BytesIO()
    torch.save({"trained": trained_state(net), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "state": state}, buffer)
    with atomic_writer(path, binary=True) as fh:
        fh.write(buffer.getvalue())


def fit_calibration(val: list[Pair], logits) -> dict:
    """Temperature (grid, NLL of the single-relation val rows) and the p(support) threshold that maximises
    balanced accuracy of support vs not on the val rows."""
    import math as m

    single = [(p, w) for p, w in zip(val, logits, strict=True) if len(p.relations) == 1]
    best_t, best_nll = 1.0, float("inf")
    for t in [0.5 + 0.1 * i for i in range(31)]:
        nll = 0.0
        for pair, windows in single:
            probs = decisive(windows, RELATIONS, t)
            nll -= m.log(max(1e-9, probs[RELATIONS.index(pair.relations[0])]))
        if nll < best_nll:
            best_t, best_nll = t, nll
    scored = [(decisive(w, RELATIONS, best_t)[0], p.relations == ("support",))
              for p, w in zip(val, logits, strict=True)]
    best_cut, best_bacc = 0.5, 0.0
    for cut in [0.05 * i for i in range(1, 20)]:
        bacc = balanced_accuracy([(s >= cut, gold) for s, gold in scored])
        if bacc > best_bacc:
            best_cut, best_bacc = cut, bacc
    return {"temperature": round(best_t, 3), "support_threshold": round(best_cut, 3),
            "val_nll": round(best_nll / max(1, len(single)), 4), "val_support_balanced_accuracy": round(best_bacc, 4),
            "fitted_on": f"the training mix's val split ({len(val)} pairs, en + zh)"}


def balanced_accuracy(rows: list[tuple[bool, bool]]) -> float:
    """Mean of recall on gold-positive and gold-negative rows ((predicted, gold) pairs).

    >>> balanced_accuracy([(True, True), (False, False), (True, False), (True, True)])
    0.75
    """
    from factlab.metrics import balanced_accuracy as by_class

    return by_class([str(g) for _, g in rows], [str(p) for p, _ in rows]) or 0.0


def train_judge(job, settings: JudgeSettings, name: str) -> dict:
    """The run (see the module docstring). Returns val and pilot metrics and `model_uri` (the model folder)."""
    import torch
    from tqdm import tqdm
    from transformers import AutoTokenizer

    from factlab.atomic import write_json
    from factlab.judge.baseline import LexicalBaseline
    from factlab.runtime import resolve_base_model

    work = Path(job.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    seed = job.seed
    torch.manual_seed(seed)
    base = resolve_base_model(settings.base_model)
    tokenizer = AutoTokenizer.from_pretrained(base)
    bundled = bundled_pairs(job.splits.get("train", []))
    by_lang, weights, val, targets, report = load_mix(settings, bundled, seed)
    write_json(work / "overlap.json", report, indent=2)
    job.tracker.log_dict(report, "data_report.json")
    logger.info("training pairs: en %d, zh %d; val %d + %d", len(by_lang["en"]), len(by_lang["zh"]),
                len(val["en"]), len(val["zh"]))
    rng = random.Random(seed)
    evals = {"mixval_en": val["en"][: settings.eval_rows], "mixval_zh": val["zh"][: settings.eval_rows]}
    for target in ("lingnli_val", "ocnli_dev", "xnli_zh_test"):
        if target in targets:
            evals[target] = rng.sample(targets[target], min(settings.eval_rows, len(targets[target])))

    baseline_path = work / "baseline.json"
    if baseline_path.is_file():
        baseline = json.loads(baseline_path.read_text())
    else:
        train_rows = [p for lang in by_lang
                      for p in random.Random(seed).sample(by_lang[lang], min(15000, len(by_lang[lang])))
                      if p.relation in ("support", "contradict", "insufficient")]
        model = LexicalBaseline().fit([p.claim for p in train_rows], [p.evidence for p in train_rows],
                                      [NLI3.get(p.relation, "neutral") for p in train_rows])
        baseline = {}
        for key, rows in evals.items():
            single = [p for p in rows if p.relation in ("support", "contradict", "insufficient")]
            guesses = model.predict([p.claim for p in single], [p.evidence for p in single])
            baseline[key] = sum(g == NLI3.get(p.relation, "neutral") for g, p in zip(guesses, single, strict=True)) \
                / max(1, len(single))
        baseline["train_rows"] = len(train_rows)
        write_json(baseline_path, baseline, indent=2)
    job.tracker.log_metrics({f"baseline/{k}": v for k, v in baseline.items() if k != "train_rows"})
    print("lexical baseline:", {k: round(v, 3) for k, v in baseline.items()}, flush=True)

    net = build_net(base, settings.lora)
    net.train()
    lora_params = [p for n, p in net.named_parameters() if p.requires_grad and not n.startswith("head.")]
    optimizer = torch.optim.AdamW([{"params": lora_params, "lr": settings.learning_rate},
                                   {"params": list(net.head.parameters()), "lr": settings.head_learning_rate}],
                                  weight_decay=settings.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(settings))
    if settings.init_from:  # a continuation stretch: the adapter and head of an earlier run, a new optimizer
        from safetensors.torch import load_file as load_adapter

        load_trained_state(net, {k: v.float() for k, v in load_adapter(
            str(Path(settings.init_from) / "adapter.safetensors")).items()})
        print(f"started from the adapter in {settings.init_from}", flush=True)
    checkpoint = work / "checkpoint.pt"
    state = {"step": 0, "pairs_seen": 0, "train_seconds": 0.0, "curve": [], "best": None, "stopped": None}
    if checkpoint.is_file() and job.resume:
        saved = torch.load(checkpoint, weights_only=False)
        load_trained_state(net, saved["trained"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        state = saved["state"]
        print(f"resumed at step {state['step']} ({state['pairs_seen']} pairs, {state['train_seconds']:.0f} s)",
              flush=True)
    sampler = Sampler(settings, tokenizer, by_lang, weights, seed)
    meta = {"name": name, "machine": _machine(), "base_model": settings.base_model, "base_sha256": _base_digest(base),
            "max_length": settings.max_length, "window_stride": settings.window_stride, "lora": settings.lora,
            "pooling": "mean", "relations_of_nli": {"entailment": "support", "contradiction": "contradict",
                                                    "neutral": "insufficient"}}

    def evaluate_now() -> dict:
        scores = {key: accuracy(rows, predict_relations(net, tokenizer, rows, settings.max_length,
                                                        settings.window_stride)) for key, rows in evals.items()}
        scores["mean"] = sum(scores.values()) / len(scores)
        return scores

    stretch_start, last_save = time.perf_counter(), time.perf_counter()
    bar = tqdm(total=settings.total_steps, initial=state["step"], desc="judge", unit="step", dynamic_ncols=True,
               mininterval=5)
    losses: list[float] = []
    while state["stopped"] is None:
        if state["step"] >= settings.total_steps:
            state["stopped"] = "total_steps"
            break
        if (time.perf_counter() - stretch_start) / 60 >= settings.stretch_minutes:
            break
        tick = time.perf_counter()
        torch.manual_seed(hash((seed, state["step"])) % (2 ** 31))
        ids_rows, masks = sampler.batch(state["step"])
        ids, attention = pad_batch(ids_rows, tokenizer.pad_token_id)
        loss = _set_loss(net(ids, attention), torch.tensor(masks))
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in net.parameters() if p.requires_grad], 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        state["step"] += 1
        state["pairs_seen"] += len(ids_rows)
        state["train_seconds"] += time.perf_counter() - tick
        bar.update(1)
        bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}",
                        pairs_s=f"{state['pairs_seen'] / max(1e-9, state['train_seconds']):.1f}")
        if state["step"] % settings.eval_every == 0 or state["step"] == settings.total_steps:
            scores = evaluate_now()
            point = {"step": state["step"], "pairs_seen": state["pairs_seen"],
                     "train_seconds": round(state["train_seconds"], 1),
                     "loss": sum(losses[-settings.eval_every:]) / max(1, len(losses[-settings.eval_every:])),
                     **{k: round(v, 4) for k, v in scores.items()}}
            state["curve"].append(point)
            with (work / "curve.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(point) + "\n")
            job.tracker.log_metrics({f"val/{k}": v for k, v in point.items() if k != "step"}, step=state["step"])
            tqdm.write(f"step {state['step']} pairs {state['pairs_seen']}: " +
                       " ".join(f"{k}={v:.3f}" for k, v in scores.items()))
            mix = (scores["mixval_en"] + scores["mixval_zh"]) / 2
            if state["best"] is None or mix > state["best"]["mix"]:
                state["best"] = {"step": state["step"], "mix": mix}
                save_adapter(net, work / "best", meta, fp16=False)
            if state["step"] == settings.pilot_steps:
                gaps = {k: scores[k] - baseline[k] for k in settings.pilot_sets if k in scores}
                state["pilot"] = {"gaps": gaps, "passed": all(g >= settings.pilot_margin for g in gaps.values())}
                tqdm.write(f"pilot gate at step {state['step']}: gain over the lexical baseline "
                           f"{ {k: round(v, 3) for k, v in gaps.items()} } -> "
                           f"{'passed' if state['pilot']['passed'] else 'FAILED'}")
                if not state["pilot"]["passed"]:
                    state["stopped"] = "pilot_failed"
            curve = state["curve"]
            if (len(curve) >= 3 and state["step"] > settings.pilot_steps
                    and curve[-1]["mean"] - curve[-2]["mean"] < settings.plateau
                    and curve[-2]["mean"] - curve[-3]["mean"] < settings.plateau):
                state["stopped"] = "plateau"
            _save_checkpoint(checkpoint, net, optimizer, scheduler, state)
            last_save = time.perf_counter()
        elif (time.perf_counter() - last_save) / 60 >= settings.checkpoint_minutes:
            _save_checkpoint(checkpoint, net, optimizer, scheduler, state)
            last_save = time.perf_counter()
    bar.close()
    _save_checkpoint(checkpoint, net, optimizer, scheduler, state)
    result = {"val/steps": state["step"], "val/pairs_seen": state["pairs_seen"],
              "val/train_seconds": state["train_seconds"]}
    if state["curve"]:
        result.update({f"val/{k}": v for k, v in state["curve"][-1].items() if isinstance(v, float)})
    for key in ("xnli_zh_test", "lingnli_val", "ocnli_dev"):
        result[f"test/{key}_acc"] = result.get(f"val/{key}", float("nan"))
    if state["best"] is None:
        result["model_uri"] = ""
        return result
    # the shipped form of the best adapter, calibrated on the mix's val split
    best = build_net(base, settings.lora)
    from safetensors.torch import load_file

    load_trained_state(best, load_file(str(work / "best" / "adapter.safetensors")))
    val_rows = val["en"] + val["zh"]
    calibration = fit_calibration(val_rows, predict_relations(best, tokenizer, val_rows, settings.max_length,
                                                              settings.window_stride))
    folder = save_adapter(best, work / "model", {
        **meta, "calibration": calibration, "best_step": state["best"]["step"], "steps": state["step"],
        "pairs_seen": state["pairs_seen"], "train_seconds": round(state["train_seconds"]),
        "stopped": state["stopped"] or "stretch", "pilot": state.get("pilot"), "baseline": baseline,
        "curve": state["curve"], "data": {k: v for k, v in report.items() if k != "raw"}}, fp16=True)
    job.tracker.log_metrics({f"calibration/{k}": v for k, v in calibration.items() if isinstance(v, float)})
    result["model_uri"] = str(folder.resolve())
    result["adapter_sha256"] = sha256_file(folder / "adapter.safetensors")
    print(f"stopped: {state['stopped'] or 'end of stretch (rerun to resume)'}; model: {folder}", flush=True)
    return result


def _machine() -> str:
    """The CPU this ran on, as the model card names it (detected, not assumed)."""
    import os

    from factlab.runtime import cpu_flags

    name = "CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    flags = cpu_flags()
    extra = [label for label, flag in (("AVX-512", "avx512f"), ("AMX", "amx_tile"), ("AVX2", "avx2")) if flag in flags]
    return f"a {os.cpu_count()}-core {name}" + (f" ({', '.join(extra)})" if extra else "")


def _base_digest(base: Path) -> str:
    stamp = base / "factlab_e5.json"
    if stamp.is_file():
        return json.loads(stamp.read_text())["files"].get("model.safetensors", "")
    return ""


def plot_curve(curve_file: Path, out: Path) -> Path:
    """The val accuracy per set against pairs seen, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = read_jsonl(curve_file)
    fig, ax = plt.subplots(figsize=(7, 4))
    for key in ("lingnli_val", "xnli_zh_test", "ocnli_dev", "mixval_en", "mixval_zh"):
        ax.plot([p["pairs_seen"] for p in points], [p[key] for p in points], marker="o", label=key)
    starts = [p["pairs_seen"] for a, p in zip(points, points[1:], strict=False)
              if p.get("stretch", 1) != a.get("stretch", 1)]
    for start in starts:  # a continuation stretch (a new optimizer and learning-rate schedule) starts here
        ax.axvline(start - 3200, color="grey", linestyle="--", linewidth=1)
        ax.annotate("stretch 2: continued, lr decayed to 0", (start - 3200, ax.get_ylim()[0]), fontsize=8,
                    xytext=(4, 6), textcoords="offset points", color="grey")
    ax.set_xlabel("training pairs seen")
    ax.set_ylabel("accuracy (400 rows each)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return Path(out)

