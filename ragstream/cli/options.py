"""The options and arguments several commands share (``--config``, ``--data-dir``, ``--verbose``, ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="Config file (.toml/.yaml/.json).")]
DataDirOption = Annotated[Path | None, typer.Option("--data-dir", help="Index directory (env RAGSTREAM_DATA_DIR).")]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="List every failed, skipped and warned file.")]
QuestionArgument = Annotated[str, typer.Argument(help="The question.")]
ConversationOption = Annotated[str | None, typer.Option("--conversation", help="Continue this conversation id.")]
LLMModelOption = Annotated[Path | None, typer.Option(
    "--llm-model", exists=True, dir_okay=False, resolve_path=True,
    help="Answer with this GGUF model, run locally (llm.provider=local, llm.model_path; pip install 'ragstream[local]').")]
