"""A4's deterministic S_CTX facts: the sentences closest to the question, best first (docs/pipeline.md)."""

from __future__ import annotations

from ragstream.pipeline.a4_condenser import FACTS_HEADING

GLACIERS = (
    "# Glaciers of the Alps\n\n"
    "The Alps span eight countries in central Europe. Tourism is an important industry in many valleys. "
    "Rail lines cross the range through long tunnels. Alpine glaciers lost half their ice volume since 1900, "
    "mainly because summer melting increased.\n"
)
RIVERS = (
    "# Alpine glaciers and rivers\n\n"
    "The Rhone and the Rhine both rise in Switzerland. Hydropower plants depend on their flows. "
    "The ice volume of Alpine glaciers decides how much meltwater reaches these rivers in late summer.\n"
)
QUESTION = "TASK: How much ice volume have Alpine glaciers lost since 1900?"


def _facts(make_fast_index, tmp_path, focus: str) -> list[str]:
    folder = tmp_path / f"docs-{focus}"
    folder.mkdir()
    (folder / "glaciers.md").write_text(GLACIERS)
    (folder / "rivers.md").write_text(RIVERS)
    rs = make_fast_index(data_dir=tmp_path / f"index-{focus}", agents={"a4": {"focus": focus}})
    assert rs.ingest([folder]).documents_failed == 0
    sp = rs.run_pipeline(QUESTION)
    block = sp.S_CTX_MD.split(FACTS_HEADING, 1)[1].split("Sources:", 1)[0]
    return [line.strip("` \n") for line in block.splitlines() if line.startswith("- ")]


def test_facts_start_with_the_sentence_closest_to_the_question(make_fast_index, tmp_path):
    facts = _facts(make_fast_index, tmp_path, "question")
    assert "lost half their ice volume" in facts[0]
    assert all(fact.endswith("]") for fact in facts)  # every fact is cited
    numbers = {fact.rsplit("[", 1)[1] for fact in facts}
    assert len(numbers) == 2  # evidence from both attachments, not only [1]


def test_leading_focus_keeps_each_chunks_first_sentences(make_fast_index, tmp_path):
    facts = _facts(make_fast_index, tmp_path, "leading")
    assert any(lead in facts[0] for lead in ("Alps span eight countries", "Rhone and the Rhine"))


def test_sentence_scores_use_the_fast_encoder_and_never_load_the_passage_encoder(tmp_path, hash_embedder):
    """A new question's S_CTX facts are scored on the query encoder: a process that only answers never
    loads the passage encoder (torch by default), which cost a new CLI question about 5 s."""
    from ragstream import Ragstream, load_config
    from ragstream.providers.embedders.query_encoder import QueryEncoderEmbedder

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "glaciers.md").write_text(GLACIERS)
    (folder / "rivers.md").write_text(RIVERS)
    config = load_config(data_dir=tmp_path / "index", reranker={"backend": "none"})
    with Ragstream(config, embedder=hash_embedder) as writer:
        assert writer.ingest([folder]).documents_failed == 0

    loads: list[int] = []

    def passages() -> object:

        loads.append(1)
        return hash_embedder

    split = QueryEncoderEmbedder(hash_embedder, passages, hash_embedder.model_id)  # type: ignore[arg-type]
    with Ragstream(config, embedder=split) as reader:
        sp = reader.run_pipeline(QUESTION)
        assert "lost half their ice volume" in sp.S_CTX_MD.split(FACTS_HEADING, 1)[1].splitlines()[1]
        assert reader.ask("TASK: Which rivers rise in Switzerland?").citations
    assert loads == []


def test_a_sentence_two_attachments_share_is_stated_once(make_fast_index, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "glaciers.md").write_text(GLACIERS)
    (folder / "quoted.md").write_text(  # quotes the glacier finding word for word, as overlapping chunks repeat text
        "# Climate notes\n\nA report on the Alps says: Alpine glaciers lost half their ice volume since 1900, mainly "
        "because summer melting increased. Snow cover now melts weeks earlier.\n")
    rs = make_fast_index(data_dir=tmp_path / "index", agents={"a4": {"focus": "question"}})
    assert rs.ingest([folder]).documents_failed == 0
    sp = rs.run_pipeline(QUESTION)
    assert len(sp.final_selection_ids) == 2
    block = sp.S_CTX_MD.split(FACTS_HEADING, 1)[1].split("Sources:", 1)[0]
    facts = [line for line in block.splitlines() if line.startswith("- ")]
    assert sum("lost half their ice volume since 1900" in fact for fact in facts) == 1, facts


def test_a_per_document_cap_gives_the_place_to_another_document(make_fast_index, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    long_glaciers = "# Glaciers of the Alps\n\n" + "\n\n".join(  # several chunks of one document rank first
        f"## Part {part}\n\nAlpine glaciers lost ice volume since 1900 in part {part} of the survey. "
        + " ".join(f"Glacier sentence {part}.{n} about Alpine ice volume loss." for n in range(30))
        for part in range(4))
    (folder / "glaciers.md").write_text(long_glaciers)
    (folder / "rivers.md").write_text(RIVERS)

    def attached(cap: int) -> list[str]:
        rs = make_fast_index(data_dir=tmp_path / f"index-{cap}", chunking={"chunk_size": 120, "chunk_overlap": 0},
                             pipeline={"N3_FINAL_SELECTION_MAX": 3, "N3_PER_DOCUMENT_MAX": cap})
        assert rs.ingest([folder]).documents_failed == 0
        sp = rs.run_pipeline(QUESTION)
        return [rs.store.fetch([cid])[cid].metadata.source for cid in sp.final_selection_ids]

    uncapped, capped = attached(0), attached(1)
    assert len(uncapped) == 3 and len(set(uncapped)) < 3  # the long document takes several places
    assert len(capped) == 2 and len(set(capped)) == 2  # one each: glaciers and rivers (no third document)
