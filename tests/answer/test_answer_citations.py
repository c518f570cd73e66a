"""Citation markers, three-tier matching, stream events and confidence, on real sample chunks."""

from __future__ import annotations

import pytest

from ragstream.answer.citations import CitationResolver, CitationTracker, build_sources, dice_similarity, track_text
from ragstream.answer.confidence import calculate_confidence
from ragstream.answer.markers import MarkerScanner, marker_numbers
from ragstream.answer.models import DocumentChunk
from ragstream.answer.streaming import stream_events
from ragstream.config import CitationConfig, ConfidenceConfig

CONFIG = CitationConfig()


def chunk(n: int, title: str, section: str, score: float = 0.6) -> DocumentChunk:
    return DocumentChunk(chunk_id=f"c{n}", document_id=f"d-{title}", text=f"text {n}", relevance_score=score,
                         position_in_doc=n, metadata={"title": title, "section": section, "url": f"docs/{title}.md",
                                                      "source": f"docs/{title}.md", "page": None})


CHUNKS = [chunk(1, "Timeouts", "Fine tuning the configuration"), chunk(2, "Exceptions", "Exception classes"),
          chunk(3, "QuickStart", "Streaming Responses")]


def scan(deltas: list[str]) -> list[tuple[str, str]]:
    scanner = MarkerScanner(CONFIG.max_marker_chars)
    pieces = [piece for delta in deltas for piece in scanner.feed(delta)] + scanner.finish()
    return [(piece.kind, piece.text) for piece in pieces]


def markers(deltas: list[str]) -> list[str]:
    return [text for kind, text in scan(deltas) if kind == "marker"]


def test_markers_split_across_deltas_are_held_back():
    scanner = MarkerScanner(CONFIG.max_marker_chars)
    assert [p.text for p in scanner.feed("Set a timeout [")] == ["Set a timeout "]
    assert scanner.feed("1") == []
    assert [(p.kind, p.text) for p in scanner.feed("] on the client.")] == [("marker", "[1]"), ("text", " on the client.")]


def test_markers_in_code_and_links_are_text():
    text = "See [the docs](https://x.y) and `a[0]`.\n```python\nitems[1]\n```\nDone [2]."
    assert markers([text]) == ["[2]"]
    assert markers(list(text)) == ["[2]"]  # one character per delta: same result
    assert "".join(t for _, t in scan(list(text))) == text


@pytest.mark.parametrize("text", [
    "{* ../../docs_src/app.py hl[18:19,26:27] *}", "use x[0] here", "a list[int] value", "rows[1:3] and [3:5]",
    "lines [18:19, 26:27] and [::2]", "dict_[2]",
])
def test_code_ish_brackets_are_not_markers(text):
    assert markers([text]) == []
    assert markers(list(text)) == []


def test_a_number_right_after_a_word_still_cites():
    text = "Set a timeout[2]. Both agree[1, 3], unlike x[0]."
    assert markers([text]) == ["[2]", "[1, 3]"]
    assert markers(list(text)) == markers([text])


def test_citation_forms_still_read_after_code_ish_brackets():
    text = "Use x[0] [1], then hl[3:5] [1, 3] and [Source 2]; see [Timeouts > Fine tuning the configuration]."
    assert markers([text]) == ["[1]", "[1, 3]", "[Source 2]", "[Timeouts > Fine tuning the configuration]"]
    assert markers(list(text)) == markers([text])


def test_title_marker_waits_for_the_next_character():
    assert markers(["As [Timeouts]", "(x) says"]) == []
    assert markers(["As [Timeouts]", " says"]) == ["[Timeouts]"]
    assert markers(["As [Timeouts]"]) == ["[Timeouts]"]  # stream end decides


def test_numbered_forms():
    assert marker_numbers("1, 3") == [1, 3]
    assert marker_numbers("Source 2") == [2]
    assert marker_numbers("Timeouts") is None


@pytest.mark.parametrize(("marker", "tier", "number"), [
    ("exceptions", "exact", 2),
    ("Timeouts > Fine tuning the configuration", "exact", 1),
    ("Streaming", "contains", 3),
    ("Quick Start guide", "dice", 3),
])
def test_three_tier_matching(marker, tier, number):
    (citation,) = CitationResolver(CHUNKS, CONFIG).resolve(marker)
    assert citation.matched and citation.match_type == tier and citation.number == number
    assert citation.chunk_id == CHUNKS[number - 1].chunk_id


def test_dice_threshold_is_configurable():
    assert dice_similarity("Quick Start guide", "quickstart") > 0.5
    (citation,) = CitationResolver(CHUNKS, CitationConfig(dice_threshold=0.95)).resolve("Quick Start guide")
    assert not citation.matched


def test_unmatched_dedupe_and_sources():
    tracker = CitationTracker(CitationResolver(CHUNKS, CONFIG))
    track_text("A [1]. B [1, 2]. C [7]. D [Cooking pasta]. E [7].", tracker, CONFIG)
    assert [c.chunk_id for c in tracker.matched] == ["c1", "c2"]
    assert tracker.unmatched == ["7", "Cooking pasta"]
    assert [s.url for s in build_sources(tracker.citations)] == ["docs/Timeouts.md", "docs/Exceptions.md"]


def test_stream_emits_citation_right_after_its_marker():
    tracker = CitationTracker(CitationResolver(CHUNKS, CONFIG))
    deltas = ["Use a client", " timeout [", "1]", " or catch errors [", "9] [2", "].", "\n```\nx[3]\n```"]
    events = list(stream_events(deltas, tracker, CONFIG.max_marker_chars))
    kinds = [(e.type, e.data.get("token", e.data.get("chunk_id"))) for e in events]
    citation_at = [i for i, (kind, _) in enumerate(kinds) if kind == "citation"]
    assert [kinds[i][1] for i in citation_at] == ["c1", "c2"]
    for i in citation_at:  # the token right before each citation event ends with its marker
        assert kinds[i - 1][0] == "token" and kinds[i - 1][1].endswith(f"[{int(kinds[i][1][1:])}]")
    assert "".join(e.data["token"] for e in events if e.type == "token") == "".join(deltas)
    assert tracker.unmatched == ["9"]


def test_confidence_levels():
    config = ConfidenceConfig()
    assert calculate_confidence([0.7, 0.6, 0.55], [0.7, 0.6], config).level == "High"
    assert calculate_confidence([0.7, 0.6, 0.55], [], config).level == "Medium"
    weak = calculate_confidence([0.7, 0.6, 0.55], [0.55, 0.6], config)  # cites only its weaker sources
    assert weak.level == "Medium" and "best source the answer cites has relevance 60%" in weak.reason
    medium = calculate_confidence([0.4, 0.35], [0.4], config)
    assert medium.level == "Medium" and "average relevance 38%" in medium.reason
    assert calculate_confidence([0.9], [0.9], config).reason == "Only 1 source found"
    low = calculate_confidence([0.2, 0.1, 0.1], [0.2], config)
    assert low.level == "Low" and "avg 13%" in low.reason
    assert calculate_confidence([], [], config).level == "Low"


def test_a_bracket_quoted_from_an_attachment_is_text_not_a_citation():
    quoted = DocumentChunk(chunk_id="c9", document_id="d-trial", text="mean age, 66.5 [SD, 15.5] y; risk [ARD] fell",
                           relevance_score=0.6, position_in_doc=0, metadata={"title": "Trial", "section": ""})
    tracker = CitationTracker(CitationResolver([*CHUNKS, quoted], CONFIG))
    track_text("Mean age 66.5 [SD, 15.5] y [4]; the [ARD] fell; see [Nowhere].", tracker, CONFIG)
    assert [c.chunk_id for c in tracker.matched] == ["c9"]
    assert tracker.unmatched == ["Nowhere"]  # a bracket in no attachment is still reported


def test_an_abbreviation_in_brackets_is_text_and_titles_match_whole_words():
    titled = [*CHUNKS, chunk(4, "Risk factors for death", "Odds ratios")]
    tracker = CitationTracker(CitationResolver(titled, CONFIG))
    track_text("Age (odds ratio [OR] 1.07; 95% confidence interval [CI] 1.04 to 1.11) predicts death.", tracker, CONFIG)
    assert tracker.citations == []  # neither cites "Risk factors for death" (it holds "or" in "for") nor is unmatched
    (exact,) = CitationResolver([chunk(5, "FAQ", "")], CONFIG).resolve("FAQ")
    assert exact.matched and exact.match_type == "exact"  # a short name still cites when it is the title
    (whole,) = CitationResolver(titled, CONFIG).resolve("Risk factors")
    assert whole.matched and whole.match_type == "contains" and whole.number == 4
    (inside,) = CitationResolver(titled, CONFIG).resolve("Ratio")  # "ratio" only inside the word "ratios":
    assert inside.match_type == "dice"  # close in spelling, not contained
