"""The review loop without a browser: decisions stored durably and validated, the app's API on a real server (stale
cards refused), feedback into training rows (leak-checked), refitted thresholds and the product metrics, and the
notebook view. The app's trust boundary is tested in test_review_security.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factlab.review.job import feedback, target_and_store
from factlab.review.store import Decision, DecisionError, DecisionStore


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


def test_app_serves_the_cards_riskiest_first_and_records_decisions(served):
    page = served.call("GET", "/").text
    assert 'id="review-state"' in page and 'class="review-tools"' not in page  # the script adds the tools
    assert page.index('id="para-p1"') < page.index('id="para-p2"')  # red first
    state = served.call("GET", "/api/state").json()
    assert state["progress"] == {"decided": 0, "cards": len(state["versions"])} and state["reviewer"] == "tester"
    body = served.card()
    assert served.call("POST", "/api/decisions", json={**body, "decision": "accept"}).status_code == 200
    assert served.call("POST", "/api/decisions", json={**body, "decision": "reject"}).status_code == 400  # no reason
    stale = served.call("POST", "/api/decisions", json={**body, "card_version": "0000", "decision": "accept"})
    assert stale.status_code == 409 and "reload" in stale.json()["detail"]
    missing = served.call("POST", "/api/decisions", json={**body, "claim_id": "nope", "decision": "accept"})
    assert missing.status_code == 404
    after = served.call("GET", "/api/state").json()
    key = f"{body['paragraph_id']}/{body['claim_id']}"
    assert after["decisions"][key]["decision"] == "accept" and after["progress"]["decided"] == 1
    assert served.call("GET", "/api/metrics").json()["adoption"] == 1.0


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
