"""``python -m ragstream``: the command line."""

from ragstream.cli import app

app()
