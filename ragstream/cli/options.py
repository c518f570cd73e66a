"""The options and arguments several commands share (``--config``, ``--data-dir``, ``--verbose``, ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="Config file (.toml/.yaml/.json).")]
DataDirOption = Annotated[Path | None, typer.Option("--data-dir", help="Index directory (env RAGSTREAM_DATA_DIR).")]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="List every failed, skipped and warned file.")]
QuestionArgument = Annotated[str, typer.Argument(help="The question.")]
CollectionOption = Annotated[str | None, typer.Option("--collection", help="The collection the documents join "
                                                    "(by name; default: the default collection).")]
ScopeOption = Annotated[list[str] | None, typer.Option("--collection", help="Search only this collection (by name; "
                                                       "repeatable). Default: every collection.")]
ConversationOption = Annotated[str | None, typer.Option("--conversation", help="Continue this conversation id.")]
LLMModelOption = Annotated[Path | None, typer.Option(
    "--llm-model", exists=True, dir_okay=False, resolve_path=True,
    help="Answer with this GGUF model, run locally (llm.provider=local, llm.model_path; pip install 'ragstream[local]').")]
