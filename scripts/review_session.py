# python scripts/review_session.py run=outputs/review_demo/en_short decisions=docs/review/decisions_en_short.json \
#     screenshot=docs/img/review.png
"""Record a reviewer's decisions through the review app in a real headless Chromium, as a person clicks them
(accept / reject / revise buttons, the reason typed into the form), then print the product metrics and save a
screenshot. The decisions file lists, per card "<paragraph id>/<claim id>", the decision, and for reject / revise the
label it should have, the reason and (revise) the claim as it should read.

Arguments: `run=` and `db=` as review.py's (conf/review.yaml), `decisions=<json>`, `screenshot=<png>`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> dict:
    from factlab.config import compose_config
    from factlab.review.app import BackgroundServer, build_app
    from factlab.review.browser import Chromium
    from factlab.review.feedback import decided, product_metrics
    from factlab.review.job import target_and_store

    args = dict(a.split("=", 1) for a in (sys.argv[1:] if argv is None else argv))
    plan = json.loads(Path(args.pop("decisions")).read_text(encoding="utf-8"))
    screenshot = args.pop("screenshot", None)
    cfg = compose_config("review", [f"{k}={v}" for k, v in args.items()] + [f"reviewer={plan['reviewer']}"])
    target, store = target_and_store(cfg)
    with BackgroundServer(build_app(target, store, cfg.reviewer)) as server, Chromium(height=1000) as browser:
        browser.open(server.url)
        browser.wait_for("document.querySelectorAll('.claim .review-tools').length")
        for item in plan["decisions"]:
            paragraph, claim = item["card"].split("/")
            card = f'.claim[data-paragraph="{paragraph}"][data-claim="{claim}"]'
            browser.click(f"{card} .review-tools .{item['decision']}")
            if item["decision"] != "accept":
                browser.wait_for(f"document.querySelector('{card} .review-form')")
                if item.get("revised_claim"):
                    browser.eval(f"document.querySelector('{card} textarea[name=revised_claim]').value = ''")
                    browser.click(f"{card} textarea[name=revised_claim]")
                    browser.type(item["revised_claim"])
                if item.get("revised_label"):
                    browser.eval(f"document.querySelector('{card} select[name=revised_label]').value = "
                                 f"{json.dumps(item['revised_label'])}")
                browser.click(f"{card} textarea[name=reason]")
                browser.type(item.get("reason", ""))
                browser.click(f"{card} .review-form button[type=submit]")
            browser.wait_for(f"(document.querySelector('{card} .review-status').getAttribute('data-decision') || '')"
                             f" === {json.dumps(item['decision'])}")
        browser.reload()
        browser.wait_for("document.querySelectorAll('.claim .review-tools').length")
        if screenshot:
            browser.eval("window.scrollTo(0, 0)")
            browser.screenshot(screenshot)
    metrics = product_metrics(decided(target, store.current(target.key)))
    print(json.dumps({"run_key": target.key, "metrics": metrics}, indent=2))
    return metrics


if __name__ == "__main__":
    main()
