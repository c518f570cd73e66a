"""Does a retrieval config hold up outside SciFact? A small judged check on ../shared/data markdown_docs and pdfs.

Usage: python bench/retrieval_local_check.py [--data ../shared/data] [--index-dir DIR]

Those folders come without queries or judgements, so this file carries its own: 32 questions on the
httpx docs and 18 on the PDFs, written from reading the documents (not from any ranking), each
with the file(s) that answer it and a short answer string. A chunk is relevant when it belongs to
one of those files and contains the answer string (case, whitespace and dash style ignored);
a file is relevant when it is listed. Every question must have a relevant chunk in the index.

Each corpus is ingested once with the default embedder (``--index-dir`` keeps the indexes between
runs), then every variant searches the same index: bm25, dense, the old hybrid default (chunk-level
RRF k=60 over 100 candidates) and the current ``RetrievalConfig()``, plus the two halves of the change.
Prints one JSON: per corpus and variant, chunk-level NDCG@10, MRR@10 and hit@1/@5 (the chunk that
answers), and file-level NDCG@10 and hit@1 (ranx).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from ranx import Qrels, Run, evaluate

from ragstream import Ragstream, load_config
from ragstream.config import RetrievalConfig
from ragstream.models import SearchMode
from ragstream.retrieval.searcher import Searcher

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEPTH = 100

# (question, answering files, answer string)
MARKDOWN: list[tuple[str, tuple[str, ...], str]] = [
    ("How long does httpx wait on an inactive network connection before giving up by default?", ("timeouts.md",), "5 seconds"),
    ("Which kinds of timeout can be tuned separately?", ("timeouts.md",), "four different types of timeouts"),
    ("What is the default maximum number of connections in the connection pool?", ("resource-limits.md",), "(Default 100)"),
    ("How can I run a callback every time a request is sent or a response arrives?", ("event-hooks.md",), "event_hooks="),
    ("How do I turn on HTTP/2 for my client?", ("http2.md",), "http2=True"),
    ("How can I route requests through a SOCKS proxy?", ("proxies.md",), "socks5://"),
    ("How do I turn off TLS certificate checking for a server with a self-signed certificate?", ("ssl.md",), "verify=False"),
    ("Which environment variable points to a custom CA bundle file?", ("environment_variables.md", "ssl.md"), "SSL_CERT_FILE"),
    ("How do I make some hosts bypass the proxy configured in the environment?", ("environment_variables.md",), "NO_PROXY"),
    ("How do I authenticate with HTTP digest credentials?", ("authentication.md", "quickstart.md"), "DigestAuth"),
    ("Can httpx read usernames and passwords from a .netrc file?", ("authentication.md",), "NetRCAuth"),
    ("How can I send requests straight to a Flask app without going over the network?", ("transports.md",), "WSGITransport"),
    ("How do I test a Starlette or FastAPI application with httpx in async tests?", ("transports.md", "async.md"), "ASGITransport"),
    ("How do I show a progress bar while downloading a large file?", ("clients.md",), "num_bytes_downloaded"),
    ("Does httpx follow redirects automatically like requests does?", ("compatibility.md", "quickstart.md"), "follow_redirects"),
    ("How do I iterate over the response bytes in async code?", ("async.md",), "aiter_bytes"),
    ("How can httpx guess the character set of a response automatically?", ("text-encodings.md",), "chardet"),
    ("How do I see debug output about connections and requests?", ("logging.md",), "basicConfig"),
    ("How do I add query string parameters to a request URL?", ("quickstart.md",), "params="),
    ("How do I upload a file as multipart form data?", ("quickstart.md",), "files="),
    ("How do I send a JSON body in a POST request?", ("quickstart.md",), "json="),
    ("Which exception covers the errors that happen while sending a request over the network?", ("exceptions.md",), "TransportError"),
    ("How do I run the tests and linters when contributing to httpx?", ("contributing.md",), "scripts/test"),
    ("How can I get low-level connection events like TCP connect and the TLS handshake?", ("extensions.md",), '"trace"'),
    ("Is there a plugin for consuming server-sent events?", ("third_party_packages.md",), "httpx-sse"),
    ("How do I mock HTTPX responses in my tests?", ("third_party_packages.md",), "RESPX"),
    ("What do I need to install to get HTTP/2 support?", ("http2.md", "index.md"), "httpx[http2]"),
    ("Why do HTTPS requests through my proxy fail with a handshake timeout?", ("troubleshooting.md",), "Change the scheme"),
    ("Where do I privately report a Code of Conduct violation?", ("code_of_conduct.md",), "tom@tomchristie.com"),
    ("Can httpx retry failed connection attempts?", ("transports.md",), "retries="),
    ("Which async libraries can I use httpx with besides asyncio?", ("async.md",), "Trio"),
    ("How do I set one timeout for a whole client instead of per request?", ("timeouts.md",), "timeout=10.0"),
]
PDFS: list[tuple[str, tuple[str, ...], str]] = [
    ("By what date must comments on the proposed 737 MAX airworthiness directive be received?",
     ("federal-register-2020-17221.pdf",), "September 21"),
    ("How many airplanes of U.S. registry does the proposed AD affect?", ("federal-register-2020-17221.pdf",), "73 airplanes"),
    ("What is the estimated labor cost of the AOA sensor system test?", ("federal-register-2020-17221.pdf",), "$3,400"),
    ("What is MCAS part of and when does it activate?", ("federal-register-2020-17221.pdf",), "Speed Trim System"),
    ("What is an AOA disagree alert?", ("federal-register-2020-17221.pdf",), "visual alert"),
    ("How many people died in the Lion Air Flight 610 accident?", ("federal-register-2020-17221.pdf",), "189 fatalities"),
    ("What is the angle of attack?", ("federal-register-2020-17221.pdf",), "wing meets the oncoming air"),
    ("Who should I contact for further information about this proposed AD?", ("federal-register-2020-17221.pdf",), "Ian Won"),
    ("What fax number can comments be sent to?", ("federal-register-2020-17221.pdf",), "202-493-2251"),
    ("How should comments containing confidential business information be marked?", ("federal-register-2020-17221.pdf",), "PROPIN"),
    ("Which earlier airworthiness directive does this proposal supersede?", ("federal-register-2020-17221.pdf",), "2018-23-51"),
    ("What does the stabilizer wiring change cost per airplane?", ("federal-register-2020-17221.pdf",), "$10,505"),
    ("When was the new master minimum equipment list published?", ("federal-register-2020-17221.pdf",), "April 10, 2020"),
    ("Which ATA codes are the subject of the directive?", ("federal-register-2020-17221.pdf",), "Code 22"),
    ("What is the capital of Austria?", ("google-doc-document.pdf",), "Vienna"),
    ("Which Zen of Python line is about errors?", ("google-doc-document.pdf",), "Errors should never pass silently"),
    ("What is the population of Germany?", ("google-doc-document.pdf",), "83,190,556"),
    ("What is the title of the two-column lorem ipsum document?", ("multicolumn.pdf",), "Two-Column Document"),
]
OLD_DEFAULT = RetrievalConfig(fusion="rrf", fusion_level="chunk", candidates=100, rrf_k=60)
VARIANTS: dict[str, tuple[SearchMode, RetrievalConfig]] = {
    "bm25": ("bm25", RetrievalConfig()),
    "dense": ("dense", RetrievalConfig()),
    "hybrid rrf k=60 chunk depth 100 (old default)": ("hybrid", OLD_DEFAULT),
    "hybrid alpha chunk": ("hybrid", RetrievalConfig(fusion_level="chunk")),
    "hybrid alpha neighbours window 1": ("hybrid", RetrievalConfig(fusion_level="neighbours", fusion_window=1)),
    "hybrid alpha neighbours window 2": ("hybrid", RetrievalConfig(fusion_level="neighbours", fusion_window=2)),
    "hybrid alpha document": ("hybrid", RetrievalConfig(fusion_level="document")),
    "hybrid rrf neighbours window 1": ("hybrid", RetrievalConfig(fusion="rrf", fusion_level="neighbours")),
    "hybrid alpha neighbours dbsf": ("hybrid", RetrievalConfig(normalisation="dbsf")),
    "hybrid alpha neighbours min-max": ("hybrid", RetrievalConfig(normalisation="min_max")),
    "hybrid default": ("hybrid", RetrievalConfig()),
}
METRICS = ("ndcg@10", "mrr@10", "hit_rate@1", "hit_rate@5")


def normalise(text: str) -> str:
    """Lower case, one space for any whitespace, one hyphen for any dash."""
    return re.sub(r"\s+", " ", re.sub(r"[\u2010-\u2015\u2212]", "-", text)).lower().strip()


def check(folder: Path, questions: list[tuple[str, tuple[str, ...], str]], index_dir: Path) -> dict[str, Any]:
    """Ingest ``folder`` into ``index_dir`` and score every variant on ``questions``."""
    with Ragstream(load_config(data_dir=index_dir)) as rs:
        report = rs.ingest([folder])
        chunks = [chunk for record in rs.documents() for chunk in rs.document_chunks(record.document_id)]
        chunk_qrels: dict[str, dict[str, int]] = {}
        file_qrels: dict[str, dict[str, int]] = {}
        for number, (_, files, answer) in enumerate(questions):
            qid = f"q{number}"
            chunk_qrels[qid] = {c.chunk_id: 1 for c in chunks
                                if Path(c.metadata.source).name in files and normalise(answer) in normalise(c.text)}
            file_qrels[qid] = dict.fromkeys(files, 1)
        missing = [questions[int(qid[1:])][0] for qid, rel in chunk_qrels.items() if not rel]
        if missing:
            raise SystemExit(f"no chunk of {folder} answers: {missing}")
        out: dict[str, Any] = {"documents": len(rs.documents()), "chunks": len(chunks), "questions": len(questions),
                               "documents_failed": report.documents_failed, "variants": {}}
        for name, (mode, config) in VARIANTS.items():
            searcher = Searcher(rs.store, rs.embedder, config, rs.snapshots, rs.config.limits.max_query_chars)
            chunk_run: dict[str, dict[str, float]] = {}
            file_run: dict[str, dict[str, float]] = {}
            for number, (question, _, _) in enumerate(questions):
                hits = searcher.search(question, mode=mode, top_k=DEPTH).hits
                chunk_run[f"q{number}"] = {hit.chunk.chunk_id: float(DEPTH - rank) for rank, hit in enumerate(hits)}
                files: dict[str, float] = {}
                for hit in hits:
                    files.setdefault(Path(hit.chunk.metadata.source).name, float(DEPTH - len(files)))
                file_run[f"q{number}"] = files
            by_chunk = evaluate(Qrels(chunk_qrels), Run(chunk_run), list(METRICS))
            by_file = evaluate(Qrels(file_qrels), Run(file_run), ["ndcg@10", "hit_rate@1"])
            out["variants"][name] = {
                **{f"chunk_{m}": round(float(by_chunk[m]), 4) for m in METRICS},
                **{f"file_{m}": round(float(by_file[m]), 4) for m in ("ndcg@10", "hit_rate@1")},
            }
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--index-dir", type=Path, default=None, help="Keep the two indexes here (else a temp folder).")
    parser.add_argument("--output", type=Path, default=Path(__file__).with_name("results") / "retrieval_local_check.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragstream-check-") as scratch:
        root = args.index_dir or Path(scratch)
        report = {
            "benchmark": "retrieval_local_check",
            "default": RetrievalConfig().model_dump(include={"fusion", "fusion_level", "fusion_window", "alpha", "candidates",
                                                              "rrf_k", "normalisation", "dbsf_width"}),
            "markdown_docs": check(args.data / "markdown_docs", MARKDOWN, root / "markdown_docs"),
            "pdfs": check(args.data / "pdfs", PDFS, root / "pdfs"),
        }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
