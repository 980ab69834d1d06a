"""The judge's training parts that need no model: windows, the set loss, the schedule, calibration, the sampler's
determinism and language mix, the lexical baseline."""

from __future__ import annotations

import math

import torch

from factlab.judge.baseline import LexicalBaseline, features
from factlab.judge.model import encode_windows, pad_batch
from factlab.judge.pairs import Pair
from factlab.judge.train import JudgeSettings, Sampler, _schedule, _set_loss, balanced_accuracy, fit_calibration


class CharTokenizer:
    """One id per character (ids 10+), bos 0, eos 2, pad 1: enough to test windowing."""

    bos_token_id, eos_token_id, pad_token_id = 0, 2, 1

    def __call__(self, texts, add_special_tokens=False):
        return {"input_ids": [[10 + (ord(ch) % 50) for ch in text] for text in texts]}


def test_short_pairs_are_one_window_and_long_evidence_several_overlapping():
    tok = CharTokenizer()
    short = encode_windows(tok, ["abc"], ["defg"], 32, 8)[0]
    assert short == [[0, *tok(["abc"])["input_ids"][0], 2, 2, *tok(["defg"])["input_ids"][0], 2]]
    long = encode_windows(tok, ["abc"], ["x" * 100], 32, 8)[0]
    room = 32 - 3 - 4
    assert len(long) > 1 and all(len(w) <= 32 for w in long)
    covered = sum(len(w) - 3 - 4 for w in long) - 8 * (len(long) - 1)  # overlap counted once
    assert covered >= 100 and len(long[0]) - 7 == room
    assert encode_windows(tok, ["abc"], ["x" * 100], 32, 0)[0] == [long[0]]  # stride 0: the first window only


def test_pad_batch_masks_the_padding():
    ids, mask = pad_batch([[5, 6, 7], [8]], pad=1)
    assert ids.tolist() == [[5, 6, 7], [8, 1, 1]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]


def test_set_loss_is_the_probability_of_the_allowed_relations():
    logits = torch.zeros((1, 5))
    assert math.isclose(float(_set_loss(logits, torch.tensor([[1, 0, 0, 0, 0]]))), math.log(5), rel_tol=1e-5)
    assert math.isclose(float(_set_loss(logits, torch.tensor([[0, 1, 1, 1, 1]]))), -math.log(4 / 5), rel_tol=1e-5)


def settings(**kw) -> JudgeSettings:
    base = dict(data_root="x", base_model="x", max_length=32, window_stride=0, lora={}, batch_size=4,
                learning_rate=1e-3, head_learning_rate=1e-3, weight_decay=0.0, warmup_steps=10, total_steps=110,
                pool_batches=3, eval_every=10, eval_rows=10, checkpoint_minutes=15, stretch_minutes=1,
                pilot_steps=10, pilot_margin=0.05, pilot_sets=[], plateau=0.01, shuffle_share=0.2, edit_share=0.2,
                bundled_weight=1.0, sets={}, targets={})
    return JudgeSettings(**{**base, **kw})


def test_schedule_warms_up_then_decays_to_zero():
    factor = _schedule(settings())
    assert factor(0) == 0.1 and factor(9) == 1.0 and factor(10) == 1.0 and factor(60) == 0.5 and factor(110) == 0.0


def test_sampler_is_a_pure_function_of_seed_and_pool_and_mixes_languages():
    en = [Pair(f"The value is {i}.", f"The value is {i}.", ("support",), "en", "a") for i in range(20)]
    zh = [Pair(f"数值是{i}。", f"数值是{i}。", ("support",), "zh", "b") for i in range(20)]
    by_lang, weights = {"en": en, "zh": zh}, {"en": [1.0] * 20, "zh": [1.0] * 20}
    one = Sampler(settings(), CharTokenizer(), by_lang, weights, seed=3)
    two = Sampler(settings(), CharTokenizer(), by_lang, weights, seed=3)
    assert [one.batch(s) for s in range(6)] == [two.batch(s) for s in range(6)]
    other = Sampler(settings(), CharTokenizer(), by_lang, weights, seed=4)
    assert [one.batch(s) for s in range(6)] != [other.batch(s) for s in range(6)]
    ids, masks = one.batch(0)
    assert len(ids) == 4 and len(masks) == 4
    # rows 0-1 are English, 2-3 Chinese (the halves): Chinese characters tokenise to other ids here
    assert all(len(m) == 5 for m in masks)
    seen_masks = {tuple(m) for s in range(30) for m in one.batch(s)[1]}
    assert (0, 0, 0, 1, 1) in seen_masks  # shuffled evidence: irrelevant / insufficient
    assert (0, 0, 1, 0, 0) in seen_masks  # a contrastive edit that contradicts (number / negation)


def test_calibration_finds_the_temperature_and_a_separating_threshold():
    val = [Pair("c", "e", ("support",), "en", "a")] * 20 + [Pair("c", "e", ("contradict",), "en", "a")] * 20
    logits = [[[2.0, 0, 0, 0, 0]]] * 20 + [[[0, 0, 2.0, 0, 0]]] * 20
    cal = fit_calibration(val, logits)
    assert cal["temperature"] == 0.5 and cal["val_support_balanced_accuracy"] == 1.0


def test_balanced_accuracy_weighs_both_classes():
    assert balanced_accuracy([(True, True)] * 9 + [(True, False)]) == 0.5


def test_lexical_baseline_learns_overlap():
    claims = ["the cat sat", "the dog ran", "a bird flew", "the cat sat", "the dog ran", "a bird flew"] * 5
    evidence = ["the cat sat on a mat", "the dog ran home", "a bird flew away", "rain fell", "snow fell",
                "wind blew"] * 5
    labels = ["entailment"] * 3 + ["neutral"] * 3
    labels = labels * 5
    model = LexicalBaseline().fit(claims, evidence, labels)
    assert model.predict(["the cat sat", "the cat sat"], ["the cat sat here", "stars shine"]) == ["entailment",
                                                                                                "neutral"]
    assert features("The cat sat.", "A cat sat on a mat.")[0] == 2 / 3
