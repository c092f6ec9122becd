"""Presentation only: tables, JSON, Markdown, HTML."""
