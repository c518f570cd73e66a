"""Faithfulness benchmark: does the support check flag sentences their citations do not support?

Usage:
    python bench/faithfulness.py generate [--corpus httpx-docs --corpus scifact --corpus fastapi-docs] [--questions 30]
    python bench/faithfulness.py evaluate [--cache FILE] [--labels FILE] [--variants words,words+ce1] [--details]

``generate`` (slow: the packaged Qwen2.5-Coder-0.5B on llama.cpp) asks the questions of each corpus
through ``Ragstream.ask`` and appends the answers, with their attachments, to the cache
(``bench/datasets/faithfulness/answers.jsonl``; see bench/faithfulness_generate.py); a question already
there is not asked again. ``evaluate`` needs no LLM and no index: it checks every sentence the LLM wrote
(``SupportChecker`` with the packaged embedder and cross-encoder) and controlled perturbations of the
sentences labelled supported:

* ``number``: a number of the sentence changed to one no checked passage holds;
* ``negation``: "not" added after the first auxiliary verb (a sentence with a negation already, or
  without an auxiliary, gets none);
* ``entity``: a name of the sentence (a capitalised word inside it, an acronym, an identifier, inline
  code) swapped, where it stands, for a name of the same kind from the corpus's attachments that the
  checked passages (and their titles) do not hold;
* ``other_attachment``: the sentence replaced by a sentence of an attachment it does not cite, its
  markers kept; a sentence citing none (checked against every attachment) gets one of another
  answer's attachments that this answer's attachments do not hold.

The labels (``labels.jsonl`` beside the cache, see SOURCES.md there) say, for the sentences the LLM
wrote, whether what they cite supports them (``supported``, ``unsupported``, ``unclear``). Positives are
the perturbed sentences (and the originals labelled unsupported, reported apart as
``recall_on_real_unsupported``); negatives the originals labelled supported. Each variant (which signals
score a sentence, ``VARIANTS``; the default configuration's is named in ``default_variant``) runs on a
fresh index folder and reports: precision and recall of the verdict ``unsupported`` (and of
``unsupported or uncertain``), overall and per corpus, recall per perturbation, the false-positive rate on
supported originals (``precision_balanced``: the precision were there as many perturbed sentences as
supported ones), the share of High-confidence answers (originals and each perturbed variant) holding an
unsupported sentence without the check and with it, and the check's time per answer: wall clock p50/p95/p99
and the process's CPU time (all threads) p50/p95/p99, with the load average before and after, on the shared
machine the numbers were taken on.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from faithfulness_generate import CORPORA, generate, read_cache

from ragstream import Ragstream, load_config
from ragstream.answer.citations import CitationResolver
from ragstream.answer.confidence import calculate_confidence, with_support
from ragstream.answer.models import Confidence, DocumentChunk, SentenceSupport
from ragstream.answer.sentence_support.checker import SupportChecker, SupportModels, passage_units
from ragstream.answer.sentence_support.sentences import AnswerSentence, split_answer
from ragstream.answer.sentence_support.signals import Mention, entities, negated, number_values, numbers
from ragstream.config import RagstreamConfig

FOLDER = Path(__file__).resolve().parent / "datasets" / "faithfulness"
DEFAULT_CACHE = FOLDER / "answers.jsonl"
DEFAULT_LABELS = FOLDER / "labels.jsonl"
PERTURBATIONS = ("number", "negation", "entity", "other_attachment")
PERCENTILES = (50, 95, 99)
SEED = 24
MIN_BORROWED_WORDS = 6
AUXILIARIES = re.compile(r"\b(is|are|was|were|can|could|does|do|did|has|have|had|will|would|should|may|might|must)\b")
VARIANTS: dict[str, dict[str, Any]] = {
    "words": {"similarity": "off", "cross_encoder": "off"},
    "words+ce1": {"similarity": "off", "cross_encoder": "uncertain", "cross_encoder_max_pairs": 1},
    "words+ce2": {"similarity": "off", "cross_encoder": "uncertain", "cross_encoder_max_pairs": 2},
    "words+attachments": {"similarity": "attachments", "cross_encoder": "off"},
    "words+sentences": {"similarity": "sentences", "cross_encoder": "off"},
    "words+attachments+ce": {"similarity": "attachments", "cross_encoder": "uncertain", "cross_encoder_max_pairs": 2},
    "words+sentences+ce": {"similarity": "sentences", "cross_encoder": "uncertain", "cross_encoder_max_pairs": 2},
    "words+sentences+ce_all": {"similarity": "sentences", "cross_encoder": "all", "cross_encoder_max_pairs": 100},
}
"""Which signals score a sentence (answer.support settings); the hard checks (numbers, entities, negation) always run."""


def percentile(values: list[float], pct: int) -> float:
    """Nearest-rank percentile (0 for no values)."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, len(ordered) * pct // 100)], 1) if ordered else 0.0


@dataclasses.dataclass
class Case:
    """One answer of the cache, ready to check."""

    record: dict[str, Any]
    chunks: list[DocumentChunk]
    sentences: list[AnswerSentence]

    @property
    def key(self) -> tuple[str, str]:
        return self.record["corpus"], self.record["qid"]


def load_cases(cache: Path) -> list[Case]:
    """The cached answers the LLM wrote itself (not extractive stand-ins, not no-results)."""
    cases = []
    for record in read_cache(cache):
        if record["mode"] != "llm":
            continue
        chunks = [DocumentChunk.model_validate(chunk) for chunk in record["attachments"]]
        cases.append(Case(record, chunks, split_answer(record["answer"])))
    return cases


def load_labels(path: Path) -> dict[tuple[str, str, str], str]:
    """(corpus, qid, sentence text) -> label (``supported``, ``unsupported`` or ``unclear``); none without the file."""
    labels: dict[tuple[str, str, str], str] = {}
    if path.exists():
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    record = json.loads(line)
                    labels[(record["corpus"], record["qid"], record["text"])] = record["label"]
    return labels


# -- perturbations --------------------------------------------------------------------------------


def perturb_number(text: str, hay_numbers: set[float], rng: random.Random) -> str | None:
    """A number of ``text`` changed to a value the passages do not hold."""
    found = [m for m in numbers(text) if re.fullmatch(r"[\d,.]+", m.text)]
    if not found:
        return None
    mention = rng.choice(found)
    value = float(mention.key)
    for step in (1, 2, 3, 7, 11, 13):
        new = value + step if value < 10 else value * (1 + step / 10)
        if new not in hay_numbers:
            break
    digits = len(mention.text.split(".")[1]) if "." in mention.text else 0
    written = f"{new:.{digits}f}" if digits else str(round(new))
    return text.replace(mention.text, written, 1)


def perturb_negation(text: str) -> str | None:
    """``text`` with "not" after its first auxiliary verb (None when already negated or without one)."""
    if negated(text):
        return None
    match = AUXILIARIES.search(text)
    if match is None:
        return None
    return f"{text[: match.end()]} not{text[match.end() :]}"


def perturb_entity(text: str, pool: list[Mention], hay: str, rng: random.Random) -> str | None:
    """A name of ``text`` swapped, where it stands, for a name of the same kind from ``pool`` (the names of the
    corpus's attachments) that ``hay`` (the checked passages) does not hold."""
    names = [m for m in entities(text) if len(m.text) > 2]
    if not names:
        return None
    name = rng.choice(names)
    folded = hay.casefold()
    choices = [other.text for other in pool if _shape(other) == _shape(name) and other.text.casefold() not in folded]
    where = _place(text, name)
    if not choices or where is None:
        return None
    return f"{text[:where]}{rng.choice(choices)}{text[where + len(name.text):]}"


def _place(text: str, name: Mention) -> int | None:
    """Where ``name`` stands in ``text`` (inside inline code when it was found there)."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(name.text)}(?![\w])")
    code = [match.span() for match in re.finditer(r"(`+)(.+?)\1", text)]
    for match in pattern.finditer(text):
        inside = any(start < match.start() < end for start, end in code)
        if inside == name.in_code:
            return match.start()
    return None


def _shape(name: Mention) -> str:
    """The kind of a name: inline code, dotted identifier, snake_case, acronym, CamelCase or capitalised word."""
    text = name.text
    if name.in_code:
        return "code"
    if "." in text or "(" in text:
        return "dotted"
    if "_" in text:
        return "snake"
    if text.isupper() or any(ch.isdigit() for ch in text):
        return "acronym"
    return "camel" if any(ch.isupper() for ch in text[1:]) else "word"


def borrowed_sentence(case: Case, cited: list[int], others: list[Case], rng: random.Random) -> str | None:
    """A sentence of an attachment the sentence does not cite. A sentence citing none is checked against every
    attachment, so its stand-in comes from another answer's attachments (one no attachment of this answer holds);
    so does a sentence citing every attachment."""
    pool = [text for number, chunk in enumerate(case.chunks, start=1) if cited and number not in cited
            for text, _, _ in passage_units(chunk.text) if _prose_sentence(text)]
    if not pool:
        own = {text for chunk in case.chunks for text, _, _ in passage_units(chunk.text)}
        pool = sorted({text for other in others for chunk in other.chunks for text, _, _ in passage_units(chunk.text)
                       if _prose_sentence(text) and text not in own})
    return rng.choice(pool) if pool else None


def _prose_sentence(text: str) -> bool:
    return not text.startswith("```") and len(text.split()) >= MIN_BORROWED_WORDS


# -- evaluation -----------------------------------------------------------------------------------


def evaluate(cases: list[Case], labels: dict[tuple[str, str, str], str], config: RagstreamConfig,
             models: SupportModels) -> dict[str, Any]:
    """Verdicts on originals and perturbations; precision, recall, confidence and latency."""
    rng = random.Random(SEED)
    support = config.answer.support
    pools = {corpus: sorted({m for case in cases if case.record["corpus"] == corpus for chunk in case.chunks
                             for m in entities(chunk.text) if len(m.text) > 2}, key=lambda m: (m.text, m.in_code))
             for corpus in CORPORA}
    originals: list[dict[str, Any]] = []
    perturbed: list[dict[str, Any]] = []
    latencies: list[float] = []
    cpu_times: list[float] = []
    confidence_rows: list[tuple[Confidence, list[SentenceSupport], bool, bool]] = []  # ..., unsupported, original
    for case in cases:
        question = case.record["question"]
        resolver = CitationResolver(case.chunks, config.answer.citations)
        started, cpu = time.perf_counter(), time.process_time()
        checker = SupportChecker(case.chunks, question, resolver, support, models)
        verdicts = checker.check(case.sentences)
        latencies.append((time.perf_counter() - started) * 1000)
        cpu_times.append((time.process_time() - cpu) * 1000)
        before = _old_confidence(case, config)
        sentence_labels = [labels.get((*case.key, s.text), "unlabelled") for s in case.sentences]
        for sentence, verdict, label in zip(case.sentences, verdicts, sentence_labels, strict=True):
            checked_text = " ".join(case.chunks[n - 1].text for n in verdict.checked)
            originals.append({"corpus": case.record["corpus"], "qid": case.record["qid"], "index": sentence.index,
                              "text": sentence.text, "label": label, "verdict": verdict.verdict,
                              "score": verdict.score, "reason": verdict.reason,
                              "verbatim": _folded(sentence.text) in _folded(checked_text)})
        confidence_rows.append((before, verdicts, any(label == "unsupported" for label in sentence_labels), True))
        others = [other for other in cases if other.record["corpus"] == case.record["corpus"] and other is not case]
        for sentence, verdict, label in zip(case.sentences, verdicts, sentence_labels, strict=True):
            if label != "supported":
                continue
            hay = " ".join(f"{_labels_of(case.chunks[n - 1])} {case.chunks[n - 1].text}" for n in verdict.checked)
            variants = {
                "number": perturb_number(sentence.text, number_values(hay), rng),
                "negation": perturb_negation(sentence.text),
                "entity": perturb_entity(sentence.text, pools[case.record["corpus"]], hay, rng),
                "other_attachment": borrowed_sentence(case, verdict.citations, others, rng),
            }
            for kind, text in variants.items():
                if not text or text == sentence.text:
                    continue
                changed = dataclasses.replace(sentence, text=text)
                result = checker.check([changed])[0]
                perturbed.append({"corpus": case.record["corpus"], "qid": case.record["qid"], "kind": kind,
                                  "original": sentence.text, "text": text, "verdict": result.verdict,
                                  "score": result.score, "reason": result.reason})
                swapped = [result if v.index == sentence.index else v for v in verdicts]
                confidence_rows.append((before, swapped, True, False))
    report = _report(originals, perturbed, latencies, confidence_rows, checker.errors)
    report["cpu_ms_per_answer"] = {f"p{p}": percentile(cpu_times, p) for p in PERCENTILES}
    return report


def _folded(text: str) -> str:
    """``text`` case-folded with every run of non-word characters one space: to tell a verbatim copy."""
    return " ".join(re.sub(r"\W+", " ", text.casefold()).split())


def _labels_of(chunk: DocumentChunk) -> str:
    """A chunk's title, section and header path: names the checker finds there too."""
    return " ".join(str(chunk.metadata.get(key) or "") for key in ("title", "section", "header_path"))


def _old_confidence(case: Case, config: RagstreamConfig) -> Confidence:
    """The confidence the answer had before the support check (as stored, recomputed from its relevance)."""
    record = case.record
    count = len(case.chunks)
    cited = [c["score"] or 0.0 for c in record["citations"] if c["matched"]]
    confidence = calculate_confidence([record["avg_relevance"]] * count, cited, config.answer.confidence)
    if record.get("truncated") and confidence.level == "High":
        confidence = Confidence(level="Medium", reason=confidence.reason)
    return confidence


def _report(originals: list[dict[str, Any]], perturbed: list[dict[str, Any]], latencies: list[float],
            confidence_rows: list[tuple[Confidence, list[SentenceSupport], bool, bool]],
            errors: list[str]) -> dict[str, Any]:
    supported = [row for row in originals if row["label"] == "supported"]
    real = [row for row in originals if row["label"] == "unsupported"]

    def flagged(rows: list[dict[str, Any]], lenient: bool = False) -> int:
        verdicts = ("unsupported", "uncertain") if lenient else ("unsupported",)
        return sum(row["verdict"] in verdicts for row in rows)

    def rates(lenient: bool, corpus: str | None = None) -> dict[str, Any]:
        def of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [row for row in rows if corpus is None or row["corpus"] == corpus]

        positives, negatives, errors_ = of(perturbed), of(supported), of(real)
        tp, fp = flagged(positives, lenient), flagged(negatives, lenient)
        recall = tp / len(positives) if positives else 0.0
        fpr = fp / len(negatives) if negatives else 0.0
        return {"precision": round(tp / (tp + fp), 3) if tp + fp else None, "recall": round(recall, 3),
                "false_positive_rate": round(fpr, 3),
                "precision_balanced": round(recall / (recall + fpr), 3) if recall + fpr else None,
                "recall_on_real_unsupported": round(flagged(errors_, lenient) / len(errors_), 3) if errors_ else None,
                "perturbed": len(positives), "supported_originals": len(negatives)}

    by_kind = {kind: [row for row in perturbed if row["kind"] == kind] for kind in PERTURBATIONS}
    def high(after: bool, originals_only: bool = False) -> dict[str, Any]:
        rows = [bad for c, v, bad, original in confidence_rows if (original or not originals_only)
                and (with_support(c, v) if after else c).level == "High"]
        return {"high": len(rows), "share": round(sum(rows) / len(rows), 3) if rows else None}

    return {
        "answers_checked": len({(row["corpus"], row["qid"]) for row in originals}),
        "sentences": {"original": len(originals), "labels": dict(Counter(row["label"] for row in originals)),
                      "perturbed": {kind: len(rows) for kind, rows in by_kind.items()}},
        "unsupported": rates(lenient=False),
        "unsupported_or_uncertain": rates(lenient=True),
        "unsupported_by_corpus": {corpus: rates(lenient=False, corpus=corpus)
                                  for corpus in sorted({row["corpus"] for row in originals})},
        "recall_by_perturbation": {kind: round(flagged(rows) / len(rows), 3) if rows else None
                                   for kind, rows in by_kind.items()},
        "verdicts_on_supported_originals": dict(Counter(row["verdict"] for row in supported)),
        "verdicts_on_supported_originals_not_copied": dict(Counter(row["verdict"] for row in supported
                                                                   if not row["verbatim"])),
        "supported_originals_copied_verbatim": sum(row["verbatim"] for row in supported),
        "high_answers_with_an_unsupported_sentence": {"before": high(after=False), "after": high(after=True)},
        "high_original_answers_with_a_real_unsupported_sentence": {
            "before": high(after=False, originals_only=True), "after": high(after=True, originals_only=True)},
        "latency_ms_per_answer": {f"p{p}": percentile(latencies, p) for p in PERCENTILES},
        "signals_unavailable": errors,
        "missed": [row for row in perturbed if row["verdict"] != "unsupported"],
        "false_positives": [row for row in supported if row["verdict"] == "unsupported"],
        "real_unsupported": real,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("generate", "evaluate"))
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    parser.add_argument("--corpus", action="append", choices=sorted(CORPORA), help="generate: corpora (default all).")
    parser.add_argument("--questions", type=int, default=30, help="generate: questions per corpus.")
    parser.add_argument("--distractors", type=int, default=500, help="generate: other SciFact documents indexed.")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="evaluate: comma-separated variants to run.")
    parser.add_argument("--details", action="store_true", help="evaluate: list missed perturbations, false positives "
                        "and the verdicts on originals labelled unsupported.")
    args = parser.parse_args()
    if args.command == "generate":
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        report = generate(args.corpus or list(CORPORA), args.cache, questions=args.questions,
                          distractors=args.distractors, n_ctx=args.n_ctx, n_threads=args.n_threads)
        print(json.dumps({**report, "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=2))
        return
    if not args.cache.exists():
        sys.exit(f"no cached answers at {args.cache}: run `python bench/faithfulness.py generate` first")
    cases = load_cases(args.cache)
    labels = load_labels(args.labels)
    report: dict[str, Any] = {"benchmark": "faithfulness", "cache": str(args.cache), "variants": {}}
    for name in args.variants.split(","):
        report["variants"][name] = _run_variant(name, cases, labels, details=args.details)
    default = load_config().answer.support
    report["default_variant"] = next((name for name, settings in VARIANTS.items()
                                      if all(getattr(default, k) == v for k, v in settings.items())), None)
    print(json.dumps(report, indent=2, ensure_ascii=False))



def _run_variant(name: str, cases: list[Case], labels: dict[tuple[str, str, str], str], *,
                 details: bool) -> dict[str, Any]:
    """One variant on a fresh index folder: the passage sentences' vectors are not cached yet (as for a new
    answer); the attachments' own vectors are (the index holds them)."""
    with tempfile.TemporaryDirectory(prefix="ragstream-faithfulness-") as scratch:
        config = load_config(data_dir=Path(scratch), answer={"support": VARIANTS[name]})
        with Ragstream(config) as rs:
            reranker, _ = rs.reranker()
            embedder = rs.embedder()
            embedder.embed_queries(["warm up"])
            embedder.embed_documents([chunk.text for case in cases for chunk in case.chunks])  # as ingest did
            models = SupportModels(embedder, reranker)
            load_before = os.getloadavg()
            report = evaluate(cases, labels, config, models)
    report["load_average"] = {"before": [round(x, 2) for x in load_before],
                              "after": [round(x, 2) for x in os.getloadavg()]}
    report["settings"] = VARIANTS[name]
    if not details:
        for key in ("missed", "false_positives", "real_unsupported"):
            report[key] = len(report[key])
    return report


if __name__ == "__main__":
    main()
