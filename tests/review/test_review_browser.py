"""The review app in a real headless Chromium, as a person uses it: open the launch URL (the token becomes a cookie
and leaves the address bar), accept one card with the keyboard, reject another with a reason that tries to break the
page's embedded JSON, jump to a source, reload and see both decisions with every control; then a store locked by
another process reads as a message on the card, not a SyntaxError."""

from __future__ import annotations

import subprocess
import sys

import pytest

from factlab.cards.model import write_cards_json
from factlab.config import compose_config
from factlab.review.app import BackgroundServer, build_app
from factlab.review.browser import Chromium, find_chromium
from factlab.review.job import target_and_store

pytestmark = pytest.mark.slow

STATUS = "document.querySelectorAll('.claim .review-status')[{i}].textContent"
REASON = "the 2019 figure is from another country <!--<script> </script>"
LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(find_chromium() is None, reason="no chromium on PATH (.ci/run installs it: apt-get install "
                                                   "chromium)")
def test_accept_and_reject_in_a_real_browser_survive_a_reload(tmp_path, small_report):
    write_cards_json(small_report, tmp_path / "run" / "cards.json")
    cfg = compose_config("review", [f"run={tmp_path / 'run'}", f"db={tmp_path / 'reviews.sqlite'}", "tracking=off",
                                    "reviewer=browser-test", "db_timeout_s=0.2"])
    target, store = target_and_store(cfg)
    with BackgroundServer(build_app(target, store, "browser-test")) as server, Chromium() as browser:
        browser.open(server.url)
        assert browser.eval("location.href") == server.base, "the token left the address bar"
        assert "_xsrf=" in browser.eval("document.cookie") and "factlab-review" not in browser.eval("document.cookie")
        count = browser.wait_for("document.querySelectorAll('.claim .review-tools').length")
        assert count == len(target.versions())
        assert browser.eval("document.getElementById('review-progress').textContent") == f"0 / {count} decided"
        first = browser.eval("document.querySelectorAll('.claim .review-tools')[0].closest('.claim').id")
        assert first.startswith("claim-p1_"), "the riskiest paragraph comes first"

        browser.press("j")  # focus the first card
        browser.press("a")  # accept it
        browser.wait_for(STATUS.format(i=0) + ".startsWith('accepted by browser-test')")

        browser.click(".claim:nth-of-type(1) ~ .claim .review-tools .reject")  # the second card of the paragraph
        browser.wait_for("document.querySelector('.review-form textarea[name=reason]') === document.activeElement")
        browser.type(REASON)
        browser.click(".review-form button[type=submit]")
        browser.wait_for(STATUS.format(i=1) + ".startsWith('rejected by browser-test')")

        browser.press("k")  # back to the first card, then jump to its source chunk
        browser.press("s")
        assert browser.wait_for("location.hash").startswith("#chunk-")

        browser.reload()
        browser.wait_for("document.querySelectorAll('.claim .review-tools').length")
        assert browser.eval(STATUS.format(i=0)).startswith("accepted by browser-test")
        second = browser.eval(STATUS.format(i=1))
        assert second.startswith("rejected by browser-test") and second.endswith(REASON)
        assert browser.eval("document.querySelectorAll('.claim .review-tools').length") == count
        assert browser.eval("document.getElementById('review-progress').textContent") == f"2 / {count} decided"
        shot = browser.screenshot(tmp_path / "review.png")
        assert shot.stat().st_size > 10_000

        locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(store.path)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert locker.stdout.readline().strip() == "locked"
            browser.click(".claim:nth-of-type(1) ~ .claim .review-tools .accept")
            error = browser.wait_for("document.querySelectorAll('.claim .review-error')[1].textContent")
        finally:
            locker.communicate("", timeout=30)
        assert "locked by another process" in error and "SyntaxError" not in error
    decisions = store.history(target.key)
    assert [(d.decision, d.reviewer) for d in decisions] == [("accept", "browser-test"), ("reject", "browser-test")]
    assert decisions[1].reason == REASON
