# python benchmarks/judge_speed.py --judge e5=<URI> --judge minilm=<URI> [--pairs 512] [--threads 2]
"""What each way of running a distilled judge costs and buys on this CPU, side by side in one run.

For every judge: torch fp32 (what serving uses), torch dynamic int8 (Linear weights int8), ONNX Runtime fp32 and ONNX
Runtime dynamic int8 (the model exported with torch.onnx, quantised with onnxruntime.quantization). All variants read
the same pairs (a seeded sample of the judge_mix test split without OCNLI dev: real claim / evidence lengths, zh and
en) through the same windowing code (`SequenceClassifier`: only the forward pass is swapped), at batch 32.

Columns: pairs/s, the share of pairs whose argmax relation equals torch fp32's, the largest |p - p_fp32| over all
classes and pairs, and the model's size on disk. Fewer layers are compared as separately trained judges (a model
trained on 12 layers does not keep its accuracy when cut): pass them as further --judge entries; their accuracy is in
benchmarks/judge_heldout.py.

ONNX needs `pip install onnx onnxruntime` (not a factlab dependency); without them those rows are skipped with a
note. Writes outputs/benchmarks/judge_speed/results.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

OUT = Path("outputs/benchmarks/judge_speed")


class OnnxForward:
    """An ONNX Runtime session standing in for the Hugging Face model inside SequenceClassifier."""

    def __init__(self, path: Path, names: list[str], threads: int) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.names = names

    def __call__(self, **batch):
        import torch

        feeds = {name: batch[name].numpy().astype("int64") for name in self.names}
        return SimpleNamespace(logits=torch.from_numpy(self.session.run(["logits"], feeds)[0]))


def export_onnx(classifier, folder: Path) -> tuple[Path, list[str]]:
    """The classifier's model as an ONNX graph with dynamic batch and sequence axes."""
    import torch

    sample = classifier.tokenizer(["a claim"], ["some evidence"], return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]
    path = folder / "model.onnx"
    axes = {name: {0: "batch", 1: "sequence"} for name in names} | {"logits": {0: "batch"}}
    torch.onnx.export(classifier.model, tuple(sample[n] for n in names), str(path), input_names=names,
                      output_names=["logits"], dynamic_axes=axes, opset_version=17, dynamo=False)
    return path, names


def measure(classifier, rows, reference=None) -> dict:
    claims, evidence = [r["claim"] for r in rows], [r["evidence"] for r in rows]
    classifier.predict_proba(claims[:32], evidence[:32])  # warm up
    start = time.perf_counter()
    probs = classifier.predict_proba(claims, evidence)
    out = {"pairs_per_s": round(len(rows) / (time.perf_counter() - start), 2), "probs": probs}
    if reference is not None:
        argmax = [max(range(len(p)), key=p.__getitem__) for p in probs]
        ref_argmax = [max(range(len(p)), key=p.__getitem__) for p in reference]
        out["argmax_agreement"] = round(sum(a == b for a, b in zip(argmax, ref_argmax, strict=True)) / len(rows), 4)
        out["max_abs_dp"] = round(max(abs(a - b) for p, q in zip(probs, reference, strict=True)
                                      for a, b in zip(p, q, strict=True)), 4)
    return out


def size_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.glob("*") if p.suffix in (".safetensors", ".bin")]
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", action="append", default=[], help="NAME=<model folder or MLflow URI>")
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from factlab.models.classifier import SequenceClassifier
    from factlab.runtime import prepare_offline_env
    from factlab.tracking.refs import resolve_model

    prepare_offline_env()
    torch.set_num_threads(args.threads)
    from judge_heldout import load_sets  # the same held-out rows as the accuracy benchmark

    rows = load_sets(1, args.pairs, 1, args.seed)["mix"]
    print(f"{len(rows)} pairs (judge_mix test without OCNLI dev), batch 32, {args.threads} threads")
    try:
        import onnxruntime  # noqa: F401
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        quantize_dynamic = None
        print("onnxruntime not installed: ONNX rows skipped (pip install onnx onnxruntime)")
    results = []
    for spec in args.judge:
        name, ref = spec.split("=", 1)
        folder = resolve_model(ref)
        base = SequenceClassifier(folder, batch_size=32)
        fp32 = measure(base, rows)
        results.append({"judge": name, "variant": "torch fp32", "pairs_per_s": fp32["pairs_per_s"],
                        "argmax_agreement": 1.0, "max_abs_dp": 0.0, "size_mb": size_mb(folder),
                        "layers": base.model.config.num_hidden_layers})
        quantised = SequenceClassifier(folder, batch_size=32, int8=True)
        results.append({"judge": name, "variant": "torch dynamic int8", **_public(measure(quantised, rows,
                                                                                          fp32["probs"]))})
        if quantize_dynamic is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path, names = export_onnx(base, Path(tmp))
                base.model = OnnxForward(path, names, args.threads)
                results.append({"judge": name, "variant": "onnxruntime fp32", "size_mb": size_mb(path),
                                **_public(measure(base, rows, fp32["probs"]))})
                int8_path = Path(tmp) / "model.int8.onnx"
                quantize_dynamic(str(path), str(int8_path), weight_type=QuantType.QInt8)
                base.model = OnnxForward(int8_path, names, args.threads)
                results.append({"judge": name, "variant": "onnxruntime dynamic int8", "size_mb": size_mb(int8_path),
                                **_public(measure(base, rows, fp32["probs"]))})
        for row in results[-4:]:
            print(json.dumps(row))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    keys = ["pairs_per_s", "argmax_agreement", "max_abs_dp", "size_mb"]
    print("| judge | variant | " + " | ".join(keys) + " |\n|" + "---|" * (len(keys) + 2))
    for row in results:
        print(f"| {row['judge']} | {row['variant']} | " + " | ".join(str(row.get(k, "")) for k in keys) + " |")


def _public(measured: dict) -> dict:
    return {k: v for k, v in measured.items() if k != "probs"}


if __name__ == "__main__":
    main()
