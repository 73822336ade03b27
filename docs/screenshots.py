"""Render every page of the built docs to a PNG in headless Chromium.

To look at the whole site the way a reader sees it, in about a minute::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python docs/screenshots.py                      # -> docs/_build/screenshots/*.png
    python docs/screenshots.py --pages 'auto_examples/*'

Each page is loaded from disk, MathJax is given time to typeset, and the full length of
the page is captured (not only the first screen). ``index.html`` in the output folder
shows every screenshot on one page. Chromium is driven over its DevTools pipe
(``--remote-debugging-pipe``), so nothing beyond the standard library and a Chromium
binary is needed; without one (Debian: ``apt-get install chromium``) the script says so
and exits with status 0, since it is a tool for a person and not a check.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import fnmatch
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# Run as root in a container: no sandbox, no GPU, and nothing that reaches the network
# (the built pages need none; MathJax is copied into _static).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe")
# Chromium reads commands from fd 3 and writes replies to fd 4 of its own process.
CHROME_IN, CHROME_OUT = 3, 4
# Pages a reader does not read through: viewcode's highlighted sources (half the site)
# and the generated indices. --pages '*' takes them too.
SKIPPED = ("_modules/*", "genindex.html", "py-modindex.html", "search.html")
TALLEST = 16_000  # px; a longer page is cut there rather than making a huge image


class Chromium:
    """One headless Chromium, spoken to in DevTools-protocol messages over its pipe."""

    def __init__(self, binary: str, profile: Path, timeout: float):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        self.timeout = timeout

        def wire_pipes():
            # In the child, our two pipe ends become its fds 3 and 4, by way of fds above
            # both so that neither dup2 overwrites the other end. Only these two (and
            # stdio) are inheritable, so close_fds=False passes nothing else.
            ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
                    for fd in (to_chrome_r, from_chrome_w)]
            os.dup2(ends[0], CHROME_IN)
            os.dup2(ends[1], CHROME_OUT)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=wire_pipes)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._events: list[dict] = []
        self._next_id = 0

    def close(self) -> None:
        os.close(self._to_chrome)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._from_chrome)

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium exited (status {self.process.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, session: str | None = None, **params) -> dict:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self._events.append(reply)

    def wait_for(self, event: str, session: str) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, seen in enumerate(self._events):
                if seen.get("method") == event and seen.get("sessionId") == session:
                    del self._events[i]
                    return
            self._events.append(self._read_message(deadline))

    def screenshot(self, url: str, width: int) -> tuple[bytes, int]:
        """The PNG of the whole page at ``url`` and its height in pixels."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        try:
            self.send("Page.enable", session)
            self.send("Emulation.setDeviceMetricsOverride", session, width=width, height=900,
                      deviceScaleFactor=1, mobile=False)
            self.send("Page.navigate", session, url=url)
            self.wait_for("Page.loadEventFired", session)
            # MathJax typesets after the load event; its startup promise says when it is done.
            self.send("Runtime.evaluate", session, awaitPromise=True, expression=(
                "window.MathJax && MathJax.startup && MathJax.startup.promise"
                " ? MathJax.startup.promise.then(() => true) : true"))
            height = self.send("Runtime.evaluate", session, returnByValue=True,
                               expression="document.documentElement.scrollHeight")
            height = min(int(height["result"]["value"]), TALLEST)
            shot = self.send("Page.captureScreenshot", session, format="png",
                             captureBeyondViewport=True,
                             clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        finally:
            self.send("Target.closeTarget", targetId=target)
        return base64.b64decode(shot["data"]), height


def contact_sheet(shots: list[tuple[str, Path]], out: Path) -> Path:
    """An index.html in ``out`` that shows every screenshot under its page's name."""
    body = "\n".join(
        f'<h2>{html.escape(page)}</h2><a href="{png.name}"><img src="{png.name}" '
        f'style="width:640px;border:1px solid #ccc"></a>' for page, png in shots)
    sheet = out / "index.html"
    sheet.write_text(f"<!doctype html><title>spheresde docs, every page</title>\n{body}\n")
    return sheet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", nargs="?", type=Path, default=DOCS / "_build" / "html",
                        help="the built site (default: docs/_build/html)")
    parser.add_argument("--out", type=Path, default=DOCS / "_build" / "screenshots",
                        help="folder for the PNGs (default: docs/_build/screenshots)")
    parser.add_argument("--pages", default=None,
                        help="only pages whose path matches this glob, e.g. 'auto_examples/*' "
                             "(default: every page but the highlighted sources and indices, "
                             f"{', '.join(SKIPPED)})")
    parser.add_argument("--width", type=int, default=1280, help="window width in px")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for one page")
    args = parser.parse_args(argv)

    binary = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    if binary is None:
        print(f"screenshots skipped: no Chromium found (looked for {', '.join(BROWSERS)} on "
              "PATH); on Debian or Ubuntu, apt-get install chromium", file=sys.stderr)
        return 0
    if not (args.html / "index.html").is_file():
        parser.error(f"{args.html} holds no index.html: build the docs first "
                     "(python -m sphinx -b html docs docs/_build/html)")
    def wanted(path: str) -> bool:
        if args.pages is not None:
            return fnmatch.fnmatch(path, args.pages)
        return not any(fnmatch.fnmatch(path, skipped) for skipped in SKIPPED)

    pages = sorted(p for p in args.html.rglob("*.html")
                   if "_static" not in p.parts and wanted(p.relative_to(args.html).as_posix()))
    if not pages:
        parser.error(f"no page of {args.html} matches --pages {args.pages!r}")
    args.out.mkdir(parents=True, exist_ok=True)

    start, shots = time.monotonic(), []
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        browser = Chromium(binary, Path(profile), args.timeout)
        try:
            for page in pages:
                name = page.relative_to(args.html).as_posix()
                png, height = browser.screenshot(page.resolve().as_uri(), args.width)
                target = args.out / (name.removesuffix(".html").replace("/", "__") + ".png")
                target.write_bytes(png)
                shots.append((name, target))
                print(f"{target}  ({args.width} x {height})")
        finally:
            browser.close()
    sheet = contact_sheet(shots, args.out)
    print(f"{len(shots)} pages in {time.monotonic() - start:.0f} s; all of them: {sheet}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
