"""Extractive answers quote sentences: never headings, navigation lists, link-only list items or
table-of-contents fragments (the prose check, answer/prose_check.py, knobs in answer.prose)."""

from __future__ import annotations

import pytest

from ragstream.answer.extractive import extractive_answer, quotes
from ragstream.answer.models import DocumentChunk
from ragstream.answer.prose_check import check_prose, has_verb
from ragstream.config import load_config
from ragstream.config.prose import ProseConfig
from ragstream.documents.prose import readable_units

QUESTION = "How do I define a custom validator for a field?"
NAVIGATION = (
    "## Validators\n\n"
    "- [field before validators](concepts/validators.md#field-before-validator)\n"
    "- [field plain validators](concepts/validators.md#field-plain-validator)\n"
    "- [field after validators](concepts/validators.md#field-after-validator)\n"
    "- [field wrap validators](concepts/validators.md#field-wrap-validator)\n"
)
ANSWERING = ("To define a custom validator for a field, decorate a class method with `@field_validator` "
             "and name the field it checks.")
PAGE = f"# Validators\n\n{NAVIGATION}\n## Field validators\n\n{ANSWERING}\n"


def chunk(n: int, text: str) -> DocumentChunk:
    return DocumentChunk(chunk_id=f"c{n}", document_id="d", text=text, relevance_score=0.5, position_in_doc=n,
                         metadata={"title": "T", "section": "S"})


def verdicts(text: str, config: ProseConfig | None = None) -> dict[str, str]:
    """Every sentence of ``text`` with its verdict ("" when it may be quoted)."""
    config = config or ProseConfig()
    return {s: check_prose(s, unit, config).reason for unit in readable_units(text) for s in unit.sentences}


def test_the_navigation_list_beside_a_real_sentence_loses_to_it(hash_embedder) -> None:
    chunks = [chunk(1, NAVIGATION), chunk(2, ANSWERING)]
    query = hash_embedder.embed_queries([QUESTION])
    unchecked = extractive_answer(query, chunks, hash_embedder, label="L", max_sentences=3, min_chars=20,
                                  max_example_chars=800)
    assert "field before validators [1]" in unchecked  # the shape of the reported answer
    checked = extractive_answer(query, chunks, hash_embedder, label="L", max_sentences=3, min_chars=20,
                                max_example_chars=800, prose=ProseConfig())
    assert checked.splitlines()[2:] == [f"- {ANSWERING} [2]"]


def test_an_asked_question_over_a_page_with_a_navigation_list_quotes_the_sentence(make_fast_index, tmp_path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "validators.md").write_text(PAGE, encoding="utf-8")
    rs = make_fast_index()
    rs.ingest([folder / "validators.md"])
    answer = rs.ask(QUESTION)
    body = [line for line in answer.answer.splitlines()[2:] if line.startswith("- ")]
    assert answer.metadata["mode"] == "extractive"
    assert body and body[0].startswith(f"- {ANSWERING}")
    assert not any("validators [" in line for line in body)


@pytest.mark.parametrize(("text", "reason"), [
    ("- [Swagger UI](https://github.com/swagger-api/swagger-ui)\n- [ReDoc](https://github.com/Redocly/redoc)",
     "too few words"),
    ("1. Introduction\n2. First Steps\n3. Path Parameters\n4. Query Parameters", "too few words"),
    ("On this page:\n- installing the client\n- making requests\n- response content\n- json responses",
     "a list of short items"),
    ("See [the advanced user guide](advanced.md), [the tutorial](tutorial.md) and [the reference](ref.md) too.",
     "mostly link text"),
    ("Field validators and model validators in detail", "no verb"),
    ("`http://localhost` `https://localhost` `http://localhost:8080` and `http://127.0.0.1`", "no verb"),
])
def test_fragments_are_turned_down_with_their_reason(text: str, reason: str) -> None:
    found = verdicts(text)
    assert found and all(verdict == reason for verdict in found.values()), found


@pytest.mark.parametrize("sentence", [
    ANSWERING,
    "The default behavior is to raise a `TimeoutException` after 5 seconds of network inactivity.",
    "Use trustme to generate a pair of server key/cert files, and a client cert file.",
    "Unlike `requests`, HTTPX does not follow redirects by default.",
    "You can read more about it in the [Advanced User Guide](advanced.md).",
    "These attacks exploit the fact that browsers allow scripts to send requests when they:\n"
    "* don't have a `Content-Type` header\n* and don't send any authentication credentials.",
])
def test_sentences_pass(sentence: str) -> None:
    assert set(verdicts(sentence).values()) == {""}


def test_every_rule_is_a_knob() -> None:
    assert verdicts("Field validators and model validators in detail", ProseConfig(require_verb=False)) == {
        "Field validators and model validators in detail": ""}
    assert set(verdicts(NAVIGATION, ProseConfig(enabled=False)).values()) == {""}
    assert set(verdicts("Short but it works.", ProseConfig(min_words=3)).values()) == {""}
    listed = "- one two\n- three four\n"
    assert set(verdicts(listed, ProseConfig(min_words=1, require_verb=False, max_short_items=2)).values()) == {""}
    assert set(verdicts(listed, ProseConfig(min_words=1, require_verb=False, short_item_words=1)).values()) == {""}
    linked = "Read [the whole guide on it](g.md) now please."
    assert set(verdicts(linked, ProseConfig(max_link_share=0.9)).values()) == {""}
    assert set(verdicts(linked, ProseConfig(max_link_share=0.5)).values()) == {"mostly link text"}


def test_the_knobs_come_from_file_and_environment(monkeypatch) -> None:
    assert load_config().answer.prose == ProseConfig()
    assert load_config(answer={"prose": {"min_words": 7}}).answer.prose.min_words == 7
    monkeypatch.setenv("RAGSTREAM_ANSWER__PROSE__ENABLED", "false")
    assert load_config().answer.prose.enabled is False


def test_without_any_prose_the_answer_falls_back_to_the_unchecked_quotes() -> None:
    text = extractive_answer(None, [chunk(1, NAVIGATION)], None, label="L", max_sentences=2, min_chars=10,
                             max_example_chars=800, prose=ProseConfig())
    assert text.splitlines()[2:] == ["- field before validators [1]", "- field plain validators [1]"]
    assert quotes(NAVIGATION, 10, 800, ProseConfig()) == []


def test_the_verb_test() -> None:
    assert has_verb("It uses a spooled file") and has_verb("Setting the timeout") and has_verb("Applied twice")
    assert not has_verb("field before validators") and not has_verb("`Client.send()` reference")
