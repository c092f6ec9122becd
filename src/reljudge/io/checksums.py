"""What a run read: each input file's SHA-256 and size, or an ``irds:`` input's dataset id
and the ir_datasets version (the pipeline manifest's ``inputs``, the report's facts)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reljudge.io.files import file_sha256


@dataclass(frozen=True)
class InputFile:
    """One input as read: its role, path, SHA-256 of its bytes and size; for an
    ``irds:DATASET_ID`` input, the dataset id and the ir_datasets version instead."""

    role: str
    path: str
    sha256: str | None
    size: int | None
    dataset: str | None = None
    ir_datasets: str | None = None

    def record(self) -> dict:
        """The JSON record of this input (the pipeline manifest's ``inputs``)."""
        if self.dataset is not None:
            return {"role": self.role, "dataset": self.dataset,
                    "ir_datasets": self.ir_datasets}
        return {"role": self.role, "path": self.path, "sha256": self.sha256,
                "size": self.size}


def input_file(role: str, path: str | Path) -> InputFile:
    """The checksum (SHA-256, full hex) and size of one input file, or the dataset id of an
    ``irds:DATASET_ID`` input."""
    from reljudge.io import irds

    if irds.is_irds(path):
        return InputFile(role, str(path), None, None, irds.dataset_id(path),
                         _ir_datasets_version())
    return InputFile(role, str(path), *file_sha256(path))


def _ir_datasets_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ir_datasets")
    except PackageNotFoundError:
        return None


def input_files(files: Iterable[tuple[str, str | Path]]) -> list[InputFile]:
    """Checksums of (role, path) pairs, each file once, in the order given; an ``irds:``
    dataset once per role (it is read for queries, passages or qrels: nothing to hash)."""
    from reljudge.io import irds

    out, seen = [], set()
    for role, path in files:
        key = f"{role}\t{path}" if irds.is_irds(path) else str(Path(path).resolve())
        if key not in seen:
            seen.add(key)
            out.append(input_file(role, path))
    return out
