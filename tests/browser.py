"""Debian's headless Chromium driven over the Chrome DevTools Protocol (aiohttp websocket).

A test helper, not a test: one page, synchronous calls, every console error and uncaught
exception collected. No browser is ever downloaded: it runs /usr/bin/chromium, or skips
(fails under CI=true) without it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import aiohttp

from tests.helpers import unavailable

#: --disable-features: each browser context (one a page) would open the address bar's two
#: popups as WebUI pages of their own, about 2 s of renderer CPU a page for nothing a test sees
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0")

_KEYS = {"ArrowRight": ("ArrowRight", 39), "ArrowLeft": ("ArrowLeft", 37),
         "Escape": ("Escape", 27), "Enter": ("Enter", 13)}


#: an expression polled in the page until truthy or the time (ms) is up; what it threw, if so
_POLL = ("new Promise(done => { const until = performance.now() + %f; (function again() { "
         "let value; try { value = (%s); } catch (e) { done({thrown: String(e)}); return; } "
         "if (value || performance.now() > until) done(value); else setTimeout(again, 10); "
         "})(); })")
#: what DevTools says when the page a promise waited in is gone (a navigation, a reload)
_NAVIGATED = ("Execution context was destroyed", "Inspected target navigated or closed",
              "Cannot find context with specified id")

ARTIFACTS = Path(os.environ.get("RELJUDGE_ARTIFACTS")
                 or Path(__file__).resolve().parent / "artifacts")  # screenshots (git-ignored)


def chromium_path() -> str:
    """The chromium binary, or skip the test (fail under CI=true)."""
    path = shutil.which("chromium")
    if path is None:
        unavailable("Debian's chromium is not installed (apt-get install chromium)")
    return path


class Chromium:
    """One headless Chromium process; each page opens in a browser context of its own (no
    cookies, storage or cache shared with another page), so one process serves a session."""

    def __init__(self, profile: Path) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        self.log = open(profile.parent / f"{profile.name}.stderr", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [chromium_path(), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        # the file's two lines, once written: the port and the browser's websocket path
        while len(port_file.read_text().split() if port_file.exists() else ()) < 2:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        self.port = int(port)
        self.url = f"ws://127.0.0.1:{port}{path}"

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc.poll() is None

    def close(self) -> None:
        """End the browser process."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Browser:
    """One headless Chromium page, in a fresh browser context of a running Chromium."""

    def __init__(self, chromium: Chromium, width: int = 1280, height: int = 900) -> None:
        self.chromium = chromium
        self.loop = asyncio.new_event_loop()
        self.events: list[dict] = []
        self._waiting: dict[int, asyncio.Future] = {}
        self._id = 0
        self.loop.run_until_complete(self._connect(width, height))
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    async def _connect(self, width: int, height: int) -> None:
        self._session = aiohttp.ClientSession()
        self._browser_ws = await self._session.ws_connect(self.chromium.url, max_msg_size=0)
        self._browser_reader = asyncio.ensure_future(self._read(self._browser_ws))
        self._ws = self._browser_ws
        self.context = (await self._send("Target.createBrowserContext", {}))["browserContextId"]
        target = await self._send("Target.createTarget", {
            "url": "about:blank", "browserContextId": self.context, "newWindow": True,
            "width": width, "height": height})
        self._ws = await self._session.ws_connect(
            f"ws://127.0.0.1:{self.chromium.port}/devtools/page/{target['targetId']}",
            max_msg_size=0)
        self._reader = asyncio.ensure_future(self._read(self._ws))

    async def _read(self, ws) -> None:
        async for msg in ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
            elif ws is self._ws:
                self.events.append(data)

    async def _send(self, method: str, params: dict) -> dict:
        self._id += 1
        fut = self.loop.create_future()
        self._waiting[self._id] = fut
        await self._ws.send_str(json.dumps({"id": self._id, "method": method, "params": params}))
        data = await asyncio.wait_for(fut, 60)
        if "error" in data:
            raise RuntimeError(f"{method}: {data['error']}")
        return data["result"]

    def send(self, method: str, **params) -> dict:
        """One DevTools command; returns its result."""
        return self.loop.run_until_complete(self._send(method, params))

    def eval(self, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        out = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                        awaitPromise=True)
        if "exceptionDetails" in out:
            raise RuntimeError(f"{expression}: {out['exceptionDetails']}")
        return out["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0):
        """Wait until an expression is truthy, polled in the page every 10 ms (one round trip,
        not one a poll); returns its value. An expression that throws fails the test."""
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.0, deadline - time.monotonic())
            try:
                value = self.eval(_POLL % (left * 1000, expression))
            except RuntimeError as e:
                if not any(gone in str(e) for gone in _NAVIGATED):
                    raise
                value = None  # the page navigated away mid-wait: ask the new one
            if isinstance(value, dict) and "thrown" in value:
                raise RuntimeError(f"{expression}: {value['thrown']}")
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression}")
            self.loop.run_until_complete(asyncio.sleep(0.01))

    def drawn(self) -> None:
        """Wait until the page has drawn two more frames: a change of its size or content is
        laid out and painted."""
        self.eval("new Promise(done => requestAnimationFrame(() => requestAnimationFrame("
                  "() => done(true))))")

    def open(self, url: str, ready: str = "document.body && document.body.dataset.ready === '1'"):
        """Navigate and wait until the page says it is ready."""
        self.send("Page.navigate", url=url)
        self.wait_for(ready)

    def reload(self, ready: str = "document.body && document.body.dataset.ready === '1'"):
        """Reload the page and wait until the new document is ready."""
        self.eval("document.body.dataset.ready = '0'")
        self.send("Page.reload", ignoreCache=True)
        self.wait_for(ready)

    def press(self, key: str) -> None:
        """A key press as a person makes it (keyDown with its text, then keyUp)."""
        if key in _KEYS:
            code, vk = _KEYS[key]
            down = {"key": key, "code": code, "windowsVirtualKeyCode": vk}
        else:
            code = f"Digit{key}" if key.isdigit() else f"Key{key.upper()}"
            down = {"key": key, "code": code, "text": key,
                    "windowsVirtualKeyCode": ord(key.upper())}
        self.send("Input.dispatchKeyEvent", type="keyDown", **down)
        self.send("Input.dispatchKeyEvent", type="keyUp",
                  **{k: v for k, v in down.items() if k != "text"})

    def hold(self, key: str, repeats: int) -> None:
        """A key held down: its keyDown, ``repeats`` auto-repeated keyDowns (as a keyboard
        sends them while the key stays down), then keyUp."""
        code = f"Digit{key}" if key.isdigit() else f"Key{key.upper()}"
        down = {"key": key, "code": code, "text": key, "windowsVirtualKeyCode": ord(key.upper())}
        self.send("Input.dispatchKeyEvent", type="keyDown", **down)
        for _ in range(repeats):
            self.send("Input.dispatchKeyEvent", type="keyDown", autoRepeat=True, **down)
        self.send("Input.dispatchKeyEvent", type="keyUp",
                  **{k: v for k, v in down.items() if k != "text"})

    def type_text(self, text: str) -> None:
        """Type text into the focused field."""
        self.send("Input.insertText", text=text)

    def screenshot(self, path: Path, width: int, height: int) -> Path:
        """A PNG of the page at a window width (a phone width emulates a mobile screen)."""
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=width < 600)
        self.drawn()
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def errors(self) -> list[dict]:
        """Console errors, uncaught exceptions and error log entries (e.g. CSP refusals)."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown" or (
                    m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert")) or (
                    m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error"):
                out.append(e)
        return out

    def close(self) -> None:
        """Close the page and its browser context (the Chromium process stays)."""
        if getattr(self, "loop", None) is None:
            return

        async def _close():
            await self._ws.close()
            self._reader.cancel()
            self._ws = self._browser_ws
            if self.chromium.alive():
                with contextlib.suppress(RuntimeError, asyncio.TimeoutError):
                    await self._send("Target.disposeBrowserContext",
                                     {"browserContextId": self.context})
            await self._browser_ws.close()
            self._browser_reader.cancel()
            await self._session.close()
        try:
            self.loop.run_until_complete(_close())
        finally:
            self.loop.close()
            self.loop = None
