"""Behaviour pinned: the cards verify.py writes for fixed runs are recorded once (tests/golden/cards/) and every later
run must write the same ones. The fast checker runs on the shipped classifiers, the professional checker and the
funnel on a scripted LM (tests/golden/scripted_lm.py), all over the bundled examples and corpus, through verify's own
job (`factlab.checkers.job.run`), so a refactor of how checkers are built or composed cannot change a card unseen.

Regenerate only for an intended change of behaviour, and say which cards changed and why in the commit:
`FACTLAB_GOLDEN_WRITE=1 python -m pytest tests/golden -m slow`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from factlab.checkers.job import run
from factlab.config import compose_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "datasets" / "bundled" / "examples"
CORPUS = ROOT / "datasets" / "bundled" / "corpus"
GOLD = Path(__file__).with_name("cards")
SCRIPTED = ["student._target_=scripted_lm.scripted_lm", "claim_cache.enabled=false"]
RUNS = {
    "fast_en_short": ("report_en_short.md", ["checker=fast"]),
    "fast_zh_short": ("report_zh_short.md", ["checker=fast"]),
    "fast_zh_long": ("report_zh_long.md", ["checker=fast"]),
    "professional_en_short": ("report_en_short.md", ["checker=professional", *SCRIPTED]),
    "professional_zh_short": ("report_zh_short.md", ["checker=professional", *SCRIPTED]),
    "funnel_en_short": ("report_en_short.md", ["checker=funnel", *SCRIPTED]),
}


def canonical(cards: dict) -> dict:
    """cards.json without what differs between two runs of the same code: where and when it ran, how long it took."""
    cards = json.loads(json.dumps(cards))
    cards.pop("document", None)
    cards.pop("created", None)
    funnel = cards.get("summary", {}).get("funnel")
    if funnel:
        funnel.pop("fast_s", None)
        funnel.pop("professional_s", None)
    return cards


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One cache folder for the module: the bundled corpus is indexed once, not per run."""
    return tmp_path_factory.mktemp("golden_cache")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUNS))
def test_cards_match_the_recorded_run(name, cache, tmp_path, monkeypatch):
    monkeypatch.setenv("FACTLAB_CACHE", str(cache))
    document, overrides = RUNS[name]
    out = tmp_path / "out"
    cfg = compose_config("verify", [f"input={EXAMPLES / document}", f"sources={CORPUS}", f"output_dir={out}",
                                    "progress=false", "tracking=off", *overrides])
    run(cfg)
    got = canonical(json.loads((out / "cards.json").read_text(encoding="utf-8")))
    path = GOLD / f"{name}.json"
    if os.environ.get("FACTLAB_GOLDEN_WRITE") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    want = canonical(json.loads(path.read_text(encoding="utf-8")))
    assert not (diffs := differences(got, want)), f"{name}: cards differ from {path} (module docstring):\n" + "\n".join(
        diffs[:20])


def differences(got, want, at: str = "") -> list[str]:
    """Where two cards.json trees differ; numbers within 1e-3 count as equal (another CPU's float kernels can move
    the judge's probabilities in the fourth decimal; a label or a text never moves).

    >>> differences({"p": [0.50001, "a"]}, {"p": [0.5, "a"]}), differences({"p": [1, "a"]}, {"p": [1, "b"]})
    ([], ["p[1]: 'a' != 'b'"])
    """
    if isinstance(got, dict) and isinstance(want, dict):
        keys = sorted(set(got) | set(want))
        return [d for k in keys for d in (differences(got.get(k), want.get(k), f"{at}.{k}" if at else k)
                                          if k in got and k in want else [f"{at}.{k}: only in one"])]
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return [f"{at}: {len(got)} items != {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in differences(g, w, f"{at}[{i}]")]
    numbers = (int, float)
    if isinstance(got, numbers) and isinstance(want, numbers) and not isinstance(got, bool):
        return [] if abs(got - want) <= 1e-3 else [f"{at}: {got!r} != {want!r}"]
    return [] if got == want else [f"{at}: {got!r} != {want!r}"]
