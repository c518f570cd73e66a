"""``ragstream collections list|create|show|edit|delete``: separate bodies of documents with their own
instructions and access (docs/collections.md). The CLI acts as the index's operator: it may read and change
every collection."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from ragstream.cli.index import console, fail, open_index
from ragstream.cli.options import ConfigOption, DataDirOption
from ragstream.errors import RagstreamError

if TYPE_CHECKING:
    from ragstream.models import CollectionRecord

NameArgument = Annotated[str, typer.Argument(help="The collection's name (OWNER:NAME for a user's collection whose "
                                              "name another one has too; :NAME for the one of no owner).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
DescriptionOption = Annotated[str | None, typer.Option("--description", help="What the collection holds.")]
InstructionsOption = Annotated[str | None, typer.Option(
    "--instructions", help="Text added to the answering model's instructions for questions scoped to the collection.")]
AccessOption = Annotated[str | None, typer.Option(
    "--access", help="private (its owner and editors), readers (also --reader users) or all (every user).")]
ReaderOption = Annotated[list[str] | None, typer.Option("--reader", help="A user who may read it (repeatable).")]
EditorOption = Annotated[list[str] | None, typer.Option(
    "--editor", help="A user who may read it and add or remove documents (repeatable).")]


def collections_list(config: ConfigOption = None, data_dir: DataDirOption = None, json_output: JsonOption = False) -> None:
    """List the collections with their access and document counts."""
    with open_index(config, data_dir) as rs:
        records = rs.collections()
    if json_output:
        console.print_json(json.dumps([record.model_dump() for record in records]))
        return
    from rich.table import Table

    table = Table("name", "documents", "access", "owner", "description")
    for record in records:  # the qualified name (OWNER:NAME) names each exactly
        table.add_row(record.qualified_name, str(record.documents), record.access, record.owner or "", record.description)
    console.print(table)


def collections_create(name: NameArgument, description: DescriptionOption = None, instructions: InstructionsOption = None,
                       access: AccessOption = None, reader: ReaderOption = None, editor: EditorOption = None,
                       config: ConfigOption = None, data_dir: DataDirOption = None, json_output: JsonOption = False) -> None:
    """Create a collection (private by default); ingest, sync and watch put documents in it with --collection."""
    with open_index(config, data_dir) as rs:
        try:
            record = rs.create_collection(name, description=description or "", instructions=instructions or "",
                                          access=access or "private", readers=reader or [], editors=editor or [])
        except RagstreamError as error:
            fail(error)
    _print(record, json_output, f"created collection {record.name}")


def collections_show(name: NameArgument, config: ConfigOption = None, data_dir: DataDirOption = None,
                     json_output: JsonOption = False) -> None:
    """Show one collection: its description, instructions, access and document count."""
    with open_index(config, data_dir) as rs:
        try:
            record = rs.collection(name)
        except RagstreamError as error:
            fail(error)
    _print(record, json_output, None)


def collections_edit(name: NameArgument,
                     new_name: Annotated[str | None, typer.Option("--name", help="A new name.")] = None,
                     description: DescriptionOption = None, instructions: InstructionsOption = None,
                     access: AccessOption = None, reader: ReaderOption = None, editor: EditorOption = None,
                     config: ConfigOption = None, data_dir: DataDirOption = None, json_output: JsonOption = False) -> None:
    """Change a collection's name, description, instructions or access (what is given; --reader and --editor
    replace the lists)."""
    with open_index(config, data_dir) as rs:
        try:
            record = rs.edit_collection(name, new_name=new_name, description=description, instructions=instructions,
                                        access=access, readers=reader, editors=editor)
        except RagstreamError as error:
            fail(error)
    _print(record, json_output, f"changed collection {record.name}")


def collections_delete(name: NameArgument, with_documents: Annotated[bool, typer.Option(
        "--delete-documents", help="Also delete its documents that belong to no other collection (the rest leave it).")]
        = False, config: ConfigOption = None, data_dir: DataDirOption = None) -> None:
    """Delete a collection; refused while it holds documents unless --delete-documents."""
    with open_index(config, data_dir) as rs:
        try:
            deleted = rs.delete_collection(name, delete_documents=with_documents)
        except RagstreamError as error:
            fail(error)
    console.print(f"deleted collection {name}" + (f" and {len(deleted)} document(s)" if deleted else ""))


def _print(record: CollectionRecord, json_output: bool, headline: str | None) -> None:
    if json_output:
        console.print_json(record.model_dump_json())
        return
    if headline:
        console.print(headline)
    for label, value in (("name", record.name), ("documents", record.documents), ("access", record.access),
                         ("owner", record.owner or ""), ("readers", ", ".join(record.readers)),
                         ("editors", ", ".join(record.editors)), ("description", record.description),
                         ("instructions", record.instructions)):
        console.print(f"{label}: {value}", highlight=False, markup=False, soft_wrap=True)
