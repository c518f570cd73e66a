"""``python -m ragstream.cli``: the command line (as ``python -m ragstream``)."""

from ragstream.cli import app

app()
