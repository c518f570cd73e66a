"""``ragstream ask``, ``chat`` and ``prompt``: cited answers, printed or streamed, and the SuperPrompt
pipeline's prompt."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ragstream.api_pipeline import RERANKER
from ragstream.cli.index import err_console, fail, open_index, reading_index
from ragstream.cli.options import ConfigOption, ConversationOption, DataDirOption, LLMModelOption, QuestionArgument, ScopeOption
from ragstream.errors import RagstreamError
from ragstream.models import WHOLE_INDEX, Scope

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ragstream.api import Ragstream
    from ragstream.api_types import Answer, StreamEvent, SuperPrompt
    from ragstream.remote import RemoteIndex


def ask(
    question: QuestionArgument,
    stream: Annotated[bool, typer.Option("--stream", help="Print tokens as they arrive.")] = False,
    conversation: ConversationOption = None,
    selected_text: Annotated[str | None, typer.Option("--selected-text", help="Text the question is about.")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the response (or, with --stream, events) as JSON.")] = False,
    collection: ScopeOption = None,
    llm_model: LLMModelOption = None,
) -> None:
    """Answer a question with citations (LLM when llm.base_url is set or a local model is named, else extractive)."""
    with reading_index(config, data_dir, llm_model=llm_model) as rs:
        try:
            print_answer(rs, question, conversation, selected_text, stream=stream, json_output=json_output,
                         scope=Scope(collections=collection))
        except RagstreamError as error:
            fail(error)


def chat(
    conversation: ConversationOption = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    collection: ScopeOption = None,
    llm_model: LLMModelOption = None,
) -> None:
    """Interactive chat: each answer streams; the conversation is remembered. Empty line or Ctrl-D quits."""
    with reading_index(config, data_dir, llm_model=llm_model) as rs:
        while True:
            try:
                question = input("you> ").strip()
            except EOFError:
                break
            if not question:
                break
            try:
                conversation = print_answer(rs, question, conversation, None, stream=True, json_output=False,
                                            scope=Scope(collections=collection))
            except RagstreamError as error:
                err_console.print(f"[bold red]{type(error).__name__}[/] ({error.code}): {escape(error.message)}")


def print_answer(rs: Ragstream | RemoteIndex, question: str, conversation: str | None, selected_text: str | None, *,
            stream: bool, json_output: bool, scope: Scope = WHOLE_INDEX) -> str:
    """Print one answer; returns its conversation id."""
    from ragstream.api_types import marked_answer, sources_text

    if not stream:
        answer = rs.ask(question, conversation, selected_text, scope=scope)
        print(answer.model_dump_json(indent=2) if json_output else f"{marked_answer(answer)}\n\n{sources_text(answer)}")
        if not json_output:
            _say_rewrite(answer)
        return answer.metadata["conversation_id"]
    final = _print_stream(rs.stream_answer(question, conversation, selected_text, scope=scope), json_output)
    if not json_output:
        _say_rewrite(final)
    conversation_id: str = final.metadata["conversation_id"]
    return conversation_id


def _print_stream(events: Iterable[StreamEvent], json_output: bool) -> Answer:
    """Print a streamed answer (tokens, then its sources; or each event as JSON); returns the whole answer."""
    from ragstream.api_types import sources_text

    final: Answer | None = None
    for event in events:
        if json_output:
            print(event.model_dump_json(), flush=True)
        elif event.type == "token":
            print(event.token, end="", flush=True)
        elif event.type == "queued":  # waiting in line for the answering model: said on stderr
            why = "the model is rate-limited" if event.reason == "rate_limited" else "many questions at once"
            err_console.print(f"{why}: waiting {event.waited_seconds:.0f} s (place {event.position} in line)",
                              style="dim", highlight=False, markup=False)
        if event.type == "done":
            final = event.response
    if final is None:
        raise RuntimeError("the answer stream ended without a done event")
    if not json_output:
        print(f"\n\n{sources_text(final)}")
    return final


def _say_rewrite(answer: Any) -> None:
    """On stderr: how a follow-up question was searched (``metadata.pipeline.rewritten_query``)."""
    rewritten = (answer.metadata.get("pipeline") or {}).get("rewritten_query")
    if rewritten:
        err_console.print(f"follow-up searched as: {rewritten}", style="dim", highlight=False, markup=False)


def prompt(
    text: Annotated[str, typer.Argument(help="The prompt; headers like 'TASK:' or '## Context' are optional.")],
    until: Annotated[str | None, typer.Option(help="Stop after this stage (e.g. Retrieval, A3_NLI_Gate).")] = None,
    config: ConfigOption = None,
    data_dir: DataDirOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the whole SuperPrompt as JSON.")] = False,
    collection: ScopeOption = None,
    selected_text: Annotated[str | None, typer.Option("--selected-text", help="Text the prompt is about.")] = None,
    answer: Annotated[bool, typer.Option("--answer", help="Then the Answer step: stream the answering model's reply "
                                         "to exactly this prompt (with --json, its events as JSON lines).")] = False,
) -> None:
    """Run the SuperPrompt pipeline and print prompt_ready (or the SuperPrompt as JSON), then, with --answer, the
    cited answer to it."""
    with open_index(config, data_dir, must_exist=True) as rs:
        try:
            sp = rs.run_pipeline(rs.new_prompt(text, selected_text=selected_text), until=until,
                                 scope=Scope(collections=collection))
        except RagstreamError as error:
            fail(error)
        if json_output:
            print(sp.model_dump_json(indent=2))
        else:
            print(sp.prompt_ready)
            _print_rerank(sp)
            for stage, reason in sp.fallbacks().items():
                err_console.print(f"[yellow]stage {stage} fell back:[/] {escape(reason)}")
        if answer:
            if not json_output:
                print("\n--- Answer ---")
            try:
                _print_stream(rs.stream_prompt_answer(sp, scope=Scope(collections=collection)), json_output)
            except RagstreamError as error:
                fail(error)


def _print_rerank(sp: SuperPrompt) -> None:
    """On stderr: the ReRanker's scored chunks with the cross-encoder's and the fused score and how far each moved."""
    details = sp.rerank
    if not details.cross_scores:
        return
    from rich.table import Table

    report = sp.stage_reports.get(RERANKER.entry)
    title = f"ReRanker ({report.model if report else details.backend}, weight {details.weight:g})"
    table = Table("#", "cross-encoder", "fused", "moved", "source", "section", title=title)
    chunks = sp.chunk_map()
    for rank, chunk_id in enumerate(sp.views_by_stage.get(RERANKER.entry, []), start=1):
        if chunk_id not in details.cross_scores:
            continue
        meta = chunks[chunk_id].metadata
        moved = details.moved.get(chunk_id, 0)
        table.add_row(str(rank), f"{details.cross_scores[chunk_id]:.3f}", f"{details.fused_scores[chunk_id]:.3f}",
                      f"+{moved}" if moved > 0 else str(moved), Path(meta.source).name, meta.header_path or meta.section)
    err_console.print(table)
    if details.skipped:
        err_console.print(f"kept the fused order: {details.skipped}", style="dim", highlight=False, markup=False)
