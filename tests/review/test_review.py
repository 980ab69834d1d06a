"""The review loop without a browser: decisions stored durably and validated, the app's API (stale cards refused),
feedback into training rows (leak-checked), refitted thresholds and the product metrics, and the notebook view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from factlab.cards.model import write_cards_json
from factlab.config import compose_config
from factlab.review.app import build_app
from factlab.review.job import feedback, target_and_store
from factlab.review.store import Decision, DecisionError, DecisionStore


@pytest.fixture()
def review_cfg(tmp_path, small_report):
    run = tmp_path / "verify-out"
    write_cards_json(small_report, run / "cards.json")
    return compose_config("review", [f"run={run}", f"db={tmp_path / 'reviews.sqlite'}", "tracking=off",
                                     f"feedback.out_dir={tmp_path / 'reflow'}", "reviewer=tester"])


def test_decisions_survive_a_reopened_store_and_keep_their_history(tmp_path):
    path = tmp_path / "d.sqlite"
    DecisionStore(path).record(Decision("r", "p1", "c1", "v1", "reject", reviewer="ana", reason="old source"))
    DecisionStore(path).record(Decision("r", "p1", "c1", "v2", "accept", reviewer="bo"))
    store = DecisionStore(path)
    assert [(d.decision, d.reviewer, d.card_version) for d in store.history("r")] == [
        ("reject", "ana", "v1"), ("accept", "bo", "v2")]
    assert store.current("r")[("p1", "c1")].decision == "accept" and store.current("other") == {}
    assert all(d.decided_at for d in store.history("r"))


@pytest.mark.parametrize(("fields", "message"), [
    ({"decision": "maybe"}, "decision"),
    ({"decision": "reject"}, "reason"),
    ({"decision": "revise", "reason": "x"}, "revise"),
    ({"decision": "reject", "reason": "x", "revised_label": "false"}, "revised_label"),
])
def test_bad_decisions_are_refused_naming_the_field(tmp_path, fields, message):
    with pytest.raises(DecisionError, match=message):
        DecisionStore(tmp_path / "d.sqlite").record(Decision("r", "p1", "c1", "v1", **fields))


def test_app_serves_the_cards_riskiest_first_and_records_decisions(review_cfg):
    target, store = target_and_store(review_cfg)
    client = TestClient(build_app(target, store, "tester"))
    page = client.get("/").text
    assert 'id="review-state"' in page and 'class="review-tools"' not in page  # the script adds the tools
    assert page.index('id="para-p1"') < page.index('id="para-p2"')  # red first
    state = client.get("/api/state").json()
    assert state["progress"] == {"decided": 0, "cards": len(state["versions"])} and state["reviewer"] == "tester"
    key = next(iter(state["versions"]))
    paragraph, claim = key.split("/")
    body = {"paragraph_id": paragraph, "claim_id": claim, "card_version": state["versions"][key]}
    assert client.post("/api/decisions", json={**body, "decision": "accept"}).status_code == 200
    assert client.post("/api/decisions", json={**body, "decision": "reject"}).status_code == 400  # no reason
    stale = client.post("/api/decisions", json={**body, "card_version": "0000", "decision": "accept"})
    assert stale.status_code == 409 and "reload" in stale.json()["detail"]
    missing = client.post("/api/decisions", json={**body, "claim_id": "nope", "decision": "accept"})
    assert missing.status_code == 404
    after = client.get("/api/state").json()
    assert after["decisions"][key]["decision"] == "accept" and after["progress"]["decided"] == 1
    assert client.get("/api/metrics").json()["adoption"] == 1.0


def test_feedback_turns_decisions_into_rows_thresholds_and_metrics(review_cfg, small_report):
    target, store = target_and_store(review_cfg)
    versions = target.versions()
    for (paragraph, claim), (_, card) in target.cards().items():
        version = versions[f"{paragraph}/{claim}"]
        if card.label == "wrong":
            store.record(Decision(target.key, paragraph, claim, version, "accept", business="default"))
        else:
            store.record(Decision(target.key, paragraph, claim, version, "revise", reason="the source says otherwise",
                                  revised_claim=card.text + " (in adults)", revised_label="wrong", business="default"))
    out = feedback(review_cfg, target, store)
    metrics = out["metrics"]
    assert metrics["decided"] == len(versions) and metrics["accepted"] == 1
    assert metrics["adoption"] == pytest.approx(1 / len(versions))
    assert metrics["risky"] == len(versions)  # every card is wrong by the reviewer's labels
    assert 0 < metrics["risk_coverage"] <= 1
    assert set(out["rows"]) == {"judge", "extract_claims", "review_claims"}
    judge = [json.loads(line) for line in open(out["files"]["judge"], encoding="utf-8")]
    assert all(row["claims"][0]["label"] == "wrong" and row["claims"][0]["relation"] == "contradict" for row in judge)
    assert all(row["provenance"]["reviewer"] == "tester" or row["provenance"]["reviewer"] for row in judge)
    review_rows = [json.loads(line) for line in open(out["files"]["review_claims"], encoding="utf-8")]
    assert review_rows[0]["review"][0]["action"] == "fix" and review_rows[0]["review"][0]["fixed"].endswith("adults)")
    thresholds = out["thresholds"]
    assert thresholds["fit"] + thresholds["held_back"] == sum(bool(c.evidence) for _, c in small_report.claims()
                                                             if c.checkworthy and c.label)
    written = {path: open(path, encoding="utf-8").read() for path in out["files"].values()}
    again = feedback(review_cfg, target, store)  # the same decisions again: the same files, the same rows
    assert {path: open(path, encoding="utf-8").read() for path in again["files"].values()} == written
    assert len(list(Path(review_cfg.feedback.out_dir).rglob("*.jsonl"))) == len(written)


def test_a_report_shows_its_cards_inline_in_a_notebook(small_report):
    html = small_report._repr_html_()
    assert html.startswith('<div class="factlab-cells"') and "<html" not in html and "<script" not in html
    assert ".factlab-cells .claim" in html and "\nbody" not in html  # the style is scoped to the cells
    assert html.index('id="para-p1"') < html.index('id="para-p2"')
