"""The output folder's record: which config (and inputs) its outputs are of, whether the run
that writes them finished, and stage fingerprints, so that a stage whose inputs and settings
are unchanged is not recomputed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from reljudge.io.files import atomic_write, file_sha256

MANIFEST = "manifest.json"


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (hex, first 16 characters)."""
    return file_sha256(path)[0][:16]


def fingerprint(*parts: Any) -> str:
    """A stable hash of JSON-able parts (paths hashed by content)."""
    def norm(x: Any) -> Any:
        if isinstance(x, Path):
            return {"file": x.name, "sha": file_digest(x)} if x.exists() else {"missing": str(x)}
        if isinstance(x, dict):
            return {str(k): norm(v) for k, v in sorted(x.items())}
        if isinstance(x, (list, tuple)):
            return [norm(v) for v in x]
        return x

    blob = json.dumps([norm(p) for p in parts], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: the manifest's ``status`` from the first write of a run until its last
IN_PROGRESS = "in progress"
#: the manifest's ``status`` once a run has written every output it was going to write
FINISHED = "finished"


class Manifest:
    """The output folder's record of which stage ran with which fingerprint, and of the run
    its outputs are of (``config_digest``, ``status``)."""

    def __init__(self, out_dir: Path):
        self.path = out_dir / MANIFEST
        self.data: dict[str, Any] = {"stages": {}}
        if self.path.exists():
            try:
                self.data = json.loads(self.path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                self.data = {"stages": {}}
        self.data.setdefault("stages", {})

    @property
    def config_digest(self) -> str | None:
        """The digest of the config and inputs the outputs are (or are being made) of."""
        return self.data.get("config_digest")

    def begin(self, config_digest: str) -> None:
        """Say "in progress" with the run's config digest, before any output is replaced: a
        run killed from here on leaves a folder every reader sees as unfinished."""
        self.data.update(status=IN_PROGRESS, config_digest=config_digest, complete=False)
        self.data.pop("labelling", None)
        self.save()

    def finish(self, labelling: dict, version: str) -> None:
        """Say "finished", with the labelling's record, after the run's last output."""
        self.data.update(status=FINISHED, complete=bool(labelling["complete"]),
                         labelling=labelling, reljudge=version)
        self.save()

    def fresh(self, stage: str, key: str, outputs: list[Path]) -> bool:
        """True when the stage last ran with this key and its outputs are still the files it
        wrote (a run killed between writing them and recording them leaves them stale)."""
        rec = self.data["stages"].get(stage)
        return bool(rec) and rec.get("key") == key and all(
            p.exists() and rec.get("sha", {}).get(p.name) == file_digest(p) for p in outputs)

    def record(self, stage: str, key: str, outputs: list[Path], summary: dict) -> None:
        """Note a finished stage, with the digests of the outputs it wrote, and save the
        manifest at once."""
        self.data["stages"][stage] = {"key": key, "outputs": [p.name for p in outputs],
                                      "sha": {p.name: file_digest(p) for p in outputs},
                                      "summary": summary}
        self.save()

    def summary(self, stage: str) -> dict:
        """The summary a stage recorded last time (empty when it never ran)."""
        return self.data["stages"].get(stage, {}).get("summary", {})

    def save(self) -> None:
        """Write the manifest atomically."""
        atomic_write(self.path, json.dumps(self.data, indent=2, sort_keys=True) + "\n")
