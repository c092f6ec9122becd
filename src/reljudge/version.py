"""The package version, in one place low enough for every module to read."""

__version__ = "0.1.0"
