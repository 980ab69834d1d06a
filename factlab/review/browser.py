"""A minimal driver for a real headless Chromium over the DevTools protocol (no chromedriver, no downloads): enough
to load the review app, click, type, press keys, read the page and take a screenshot, as a person would. Used by the
browser test (tests/review/test_review_browser.py) and the docs screenshot (scripts/review_screenshot.py).

    with Chromium() as browser:
        browser.open("http://127.0.0.1:8765/")
        browser.click(".claim .review-tools .accept")
        browser.screenshot("review.png")
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any


class BrowserError(RuntimeError):
    """Chromium is missing, did not start, or the page did not do what was waited for."""


def find_chromium() -> str | None:
    """The Chromium binary on PATH (Debian: `apt-get install chromium`), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Chromium:
    """A headless Chromium with one page, driven over its DevTools websocket."""

    def __init__(self, binary: str | None = None, width: int = 1280, height: int = 900, timeout_s: float = 30) -> None:
        binary = binary or find_chromium()
        if binary is None:
            raise BrowserError("no chromium on PATH: apt-get install chromium")
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="factlab-chromium-")
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = self._devtools_port()
        pages = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(p for p in pages if p.get("type") == "page")
        from websockets.sync.client import connect

        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=timeout_s)
        self._id = 0
        self.send("Page.enable")
        self.send("Runtime.enable")

    def _devtools_port(self) -> int:
        deadline = time.monotonic() + self.timeout_s
        lines = []
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line and self.process.poll() is not None:
                break
            lines.append(line)
            match = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if match:
                return int(match.group(1))
        self.close()
        raise BrowserError("chromium did not start: " + "".join(lines[-10:]))

    def send(self, method: str, params: dict | None = None) -> dict:
        """One DevTools command; returns its result (events in between are skipped)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params or {}}))
        while True:
            message = json.loads(self.ws.recv(timeout=self.timeout_s))
            if message.get("id") == self._id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float | None = None) -> Any:
        """Poll until `expression` is truthy; returns its value."""
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.1)
        raise BrowserError(f"timed out waiting for {expression}")

    def open(self, url: str) -> None:
        """Navigate and wait for the page (and its scripts) to load."""
        self.send("Page.navigate", {"url": url})
        time.sleep(0.2)
        self.wait_for("document.readyState === 'complete'")

    def reload(self) -> None:
        self.send("Page.reload", {"ignoreCache": True})
        time.sleep(0.2)
        self.wait_for("document.readyState === 'complete'")

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the centre of the first element matching `selector`."""
        box = self.eval(f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
            if (!el) return null; el.scrollIntoView({{block: "center"}}); const r = el.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
        if not box:
            raise BrowserError(f"nothing matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def type(self, text: str) -> None:
        """Type text into the focused element."""
        self.send("Input.insertText", {"text": text})

    def press(self, key: str) -> None:
        """Press and release one printable key (e.g. "j", "a")."""
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "text": key})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key})

    def screenshot(self, path: str | Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", params)["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
