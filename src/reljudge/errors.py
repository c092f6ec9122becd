"""One exception hierarchy: the CLI turns any ReljudgeError into a one-line message and exit 2."""

from __future__ import annotations

from pathlib import Path


class ReljudgeError(Exception):
    """Base of every error reljudge raises on purpose (bad input, bad config, failed service)."""


class InputError(ReljudgeError):
    """A file or value does not have the expected form; names the file and line when known."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        self.detail = message
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(where + message)


class ConfigError(ReljudgeError):
    """A setting (flag, config file, environment variable) is missing or invalid."""


class MeasureError(ReljudgeError):
    """A measure string cannot be parsed or names an unknown measure or parameter."""


class StoreError(ReljudgeError):
    """The label store cannot be opened, migrated or written."""


class CacheError(ReljudgeError):
    """The answer cache cannot be opened or written (a full disk, a read-only folder)."""


class LLMError(ReljudgeError):
    """The LLM endpoint failed in a way that stops the whole job (auth, unknown model, budget)."""
