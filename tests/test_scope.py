"""One :class:`~ragstream.models.Scope` for every read (docs/collections.md): built at the edge, carried unchanged, and
resolved into collection ids only where the facade reads the catalog; an answer resolves it inside its retried
attempt, once, and reuses it for its labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragstream.errors import CollectionNotFoundError, VectorDBUnavailableError
from ragstream.models import WHOLE_INDEX, LazyScope, ResolvedScope, Scope

NOTICE = "# Notice period\n\nThe notice period is three months, given in writing to the head of staff.\n"
QUESTION = "How long is the notice period?"


def test_a_scope_is_a_value_of_the_names_as_given():
    scope = Scope("bob", ["handbook", "Minutes"], admin=False)
    assert scope.collections == ("handbook", "Minutes") and scope.names() == ["handbook", "Minutes"]
    assert hash(scope) == hash(Scope("bob", ("handbook", "Minutes")))  # a tuple: it can key a cache
    assert Scope("bob", []).names() is None and WHOLE_INDEX.names() is None and WHOLE_INDEX.user is None


def test_a_lazy_scope_reads_nothing_until_asked_then_once():
    reads: list[Scope] = []

    def resolve(scope: Scope) -> ResolvedScope:
        reads.append(scope)
        if len(reads) == 1:
            raise VectorDBUnavailableError("the catalog is down")  # a failed read is not kept: asked again, read again
        return ResolvedScope(collections=("c1",))

    lazy = LazyScope(Scope("bob", ["handbook"]), resolve)
    assert reads == [] and lazy.user == "bob"
    with pytest.raises(VectorDBUnavailableError):
        lazy.resolved()
    assert lazy.resolved().collections == ("c1",) and lazy.resolved() is lazy.resolved()
    assert reads == [Scope("bob", ["handbook"])] * 2


def test_an_answer_resolves_its_scope_only_when_the_answer_path_runs_and_once(make_fast_index, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch):
    rs = make_fast_index()
    rs.create_collection("handbook", access="all")
    (tmp_path / "notice.md").write_text(NOTICE)
    rs.ingest([tmp_path / "notice.md"], collection="handbook")
    reads: list[tuple] = []
    real = rs.collection_service.scope

    def counted(*args, **kwargs):  # a spy, not a stand-in: it counts the catalog reads and makes the real one
        reads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(rs.collection_service, "scope", counted)
    events = rs.stream_answer(QUESTION, scope=Scope("bob", ["handbook"]))
    assert reads == []  # building the stream reads no catalog: the answer path has not run
    done = next(event for event in events if event.type == "done").response
    assert reads == [(["handbook"], "bob", False)]  # once: the pipeline's attempt, and the labels reuse it
    assert done.sources and all(source.collections == ["handbook"] for source in done.sources)

    unknown = rs.stream_answer(QUESTION, scope=Scope("bob", ["no-such"]))  # no error yet: nothing read
    with pytest.raises(CollectionNotFoundError):
        next(iter(unknown))
    reads.clear()
    assert rs.ask(QUESTION, scope=Scope("bob", ["handbook"])).sources and len(reads) == 1


def test_a_built_prompts_answer_resolves_its_scope_before_its_first_event(make_fast_index, tmp_path: Path):
    """A built prompt runs no pipeline (no retried attempt to resolve the scope in): the scope is resolved as the
    stream starts, so a collection gone since the prompt was built is the stream's first error (over HTTP a 404
    before anything is sent, as before the Scope), never one raised at its first citation after the tokens."""
    rs = make_fast_index()
    rs.create_collection("handbook")
    (tmp_path / "notice.md").write_text(NOTICE)
    rs.ingest([tmp_path / "notice.md"], collection="handbook")
    sp = rs.run_pipeline(rs.new_prompt(QUESTION, scope=Scope(collections=["handbook"])),
                         scope=Scope(collections=["handbook"]))
    assert sp.collections == ["handbook"] and sp.messages
    events = rs.stream_prompt_answer(sp, scope=Scope(collections=sp.collections))
    assert [event.type for event in events][-1] == "done"
    rs.edit_collection("handbook", new_name="policies")
    with pytest.raises(CollectionNotFoundError):
        next(iter(rs.stream_prompt_answer(sp, scope=Scope(collections=sp.collections))))
