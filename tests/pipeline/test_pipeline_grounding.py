"""Agents may rephrase, never add: named things must come from the prompt or the attachments."""

from __future__ import annotations

from ragstream.pipeline.grounding import ungrounded, vocabulary

PROMPT = "How do I enable CORS in FastAPI? Answer as a bullet list."
ATTACHMENT = "Use CORSMiddleware from fastapi.middleware.cors; set allow_origins and allow_credentials=True."


def test_an_invented_framework_is_caught():
    known = vocabulary([PROMPT, ATTACHMENT])
    assert ungrounded("Answer using Python and Flask with Flask-Cors.", known) == ["Python", "Flask", "Flask-Cors"]


def test_rephrasing_with_known_names_and_ordinary_words_passes():
    known = vocabulary([PROMPT, ATTACHMENT])
    assert ungrounded("Answer as a bullet list. Add CORSMiddleware to the FastAPI app [1].", known) == []
    assert ungrounded("- Keep each point short.\n- Cite every point like [2, 3].", known) == []


def test_numbers_and_versions_must_be_in_the_sources():
    known = vocabulary([PROMPT, ATTACHMENT])
    assert ungrounded("Requires FastAPI 0.95 or later.", known) == ["0.95"]


def test_short_questions_are_searched_whole_and_long_prompts_also_by_sentence_groups():
    from ragstream.pipeline.query_pieces import query_pieces

    assert query_pieces("Active H. pylori urease has a polymeric structure.", 5, 2000, 40) == [
        "Active H. pylori urease has a polymeric structure."]
    long = " ".join(["alpha"] * 30) + ". " + " ".join(["beta"] * 15) + "."
    pieces = query_pieces(long, 3, 2000, 40)
    assert pieces[0] == long and len(pieces) == 3 and pieces[2].startswith("beta")
