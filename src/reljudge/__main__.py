"""``python -m reljudge`` runs the command-line tool."""

from reljudge.cli import run

run()
