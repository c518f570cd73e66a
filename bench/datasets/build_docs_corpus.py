"""Build the BEIR corpora of the documentation question sets from their upstream sources.

Usage:
  python bench/datasets/build_docs_corpus.py httpx   HTTPX_DOCS_DIR  [--out bench/datasets/httpx-docs]
  python bench/datasets/build_docs_corpus.py fastapi FASTAPI_GIT_DIR [--commit REV] [--out bench/datasets/fastapi-docs]
  python bench/datasets/build_docs_corpus.py flask   FLASK_GIT_DIR   [--commit REV] [--out bench/datasets/flask-docs]
  python bench/datasets/build_docs_corpus.py pdf-manuals UTHASH_GIT_DIR [--out bench/datasets/pdf-manuals]
  python bench/datasets/build_docs_corpus.py starlette STARLETTE_GIT_DIR [--commit REV] [--out bench/datasets/starlette-docs]
  python bench/datasets/build_docs_corpus.py pystdlib CPYTHON_GIT_DIR [--commit REV] [--out bench/datasets/pystdlib-ref]

One corpus line per page: ``{"_id": path under docs/, "title", "text": the page's Markdown, "mime": "text/markdown"}``.
Flask's pages are reST, kept as written (directives, roles, underlined titles); ragstream reads reST as plain
text, so their lines say ``"mime": "text/plain"`` and the title is the page's first underlined section title.
The title is the page's first ``#`` heading; httpx pages without one take their MkDocs navigation title.
FastAPI's ``{* ../../docs_src/file.py ln[..] hl[..] *}`` and ``{! file !}`` include directives are replaced
by the included file (only the ``ln`` lines when given), as the rendered site shows it.
pdf-manuals has no corpus.jsonl: its PDFs go to ``files/`` as they are (ragstream reads them itself), each
taken from its repository at a fixed commit and checked against its sha256.
Starlette's pages mostly have no ``#`` heading (they take their navigation title), and its mkdocstrings
"API Reference" blocks (rendered from the code's docstrings, not written in the page) are left out.
The Python standard library pages (pystdlib) are reST too, kept unchanged as ``text/plain``; their title is the
first section title with its roles read as their text (``:mod:`shutil` --- ...`` -> ``shutil — ...``).
Queries and qrels are written by hand (queries.jsonl, qrels/): this script never touches them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
from collections.abc import Callable, Iterable
from itertools import pairwise
from pathlib import Path

from ragstream.documents.markdown_text import first_h1

MIME = "text/markdown"
HERE = Path(__file__).resolve().parent

HTTPX_NAV_TITLES = {  # mkdocs.yml's nav at the same commit: the site's title of pages that have no "# " heading
    "index.md": "Introduction",
    "advanced/clients.md": "Clients",
    "advanced/authentication.md": "Authentication",
    "advanced/ssl.md": "SSL",
    "advanced/proxies.md": "Proxies",
    "advanced/timeouts.md": "Timeouts",
    "advanced/resource-limits.md": "Resource Limits",
    "advanced/event-hooks.md": "Event Hooks",
    "advanced/transports.md": "Transports",
    "advanced/text-encodings.md": "Text Encodings",
}

FASTAPI_DOCS = "docs/en/docs/"
FASTAPI_SECTIONS = ("tutorial/", "advanced/", "deployment/", "how-to/")
FASTAPI_TOP_PAGES = frozenset({
    "index.md", "async.md", "python-types.md", "fastapi-cli.md", "features.md", "virtual-environments.md",
    "alternatives.md", "benchmarks.md", "history-design-future.md",
})
FASTAPI_SKIPPED = frozenset({  # section pages that are mostly links to other pages or sites
    "advanced/index.md", "advanced/security/index.md", "how-to/index.md", "how-to/testing-database.md",
    "deployment/cloud.md", "how-to/general.md",
})
FLASK_DOCS = "docs/"
FLASK_SKIPPED = frozenset({  # the changelog and licence (included files), a link-only page, and obsolete stubs
    "changes.rst", "license.rst", "contributing.rst", "reqcontext.rst", "patterns/jquery.rst", "deploying/eventlet.rst",
})
PLAIN_MIME = "text/plain"
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1+[ \t]*$")
_RST_ROLE = re.compile(r":[\w:.-]+:`(?:[^`<]*<)?~?!?(?P<target>[^`>]*)>?`")
PYSTDLIB_DOCS = "Doc/library/"
PYSTDLIB_PAGES = (  # long reference pages of related modules: files, processes, text, data, time, logging
    "os", "os.path", "pathlib", "shutil", "tempfile", "glob", "fnmatch", "io", "subprocess", "threading",
    "json", "csv", "sqlite3", "zipfile", "tarfile", "datetime", "time", "re", "string", "itertools",
    "functools", "collections", "logging", "logging.handlers", "argparse",
    # their neighbours, which share their words (processes, queues, files, archives, config, text, builtins)
    "multiprocessing", "concurrent.futures", "asyncio-subprocess", "queue", "filecmp", "stat", "fileinput",
    "gzip", "configparser", "pickle", "calendar", "textwrap", "contextlib", "logging.config", "functions",
)
PDF_MANUALS = {  # file name in files/ -> (upstream path, commit, sha256)
    "uthash-userguide.pdf": ("doc/userguide.pdf", "fcaf9de7dfc6268a79c69410f8c9e1e3da86da85",
                             "0aa5f6aea10cad040645ef0af19f241610fc26aae5315d5b03a5c6da75f601b6"),
}
STARLETTE_DOCS = "docs/"
STARLETTE_NAV_TITLES = {  # mkdocs.yml's nav at the pinned commit
    "index.md": "Introduction", "applications.md": "Applications", "requests.md": "Requests",
    "responses.md": "Responses", "websockets.md": "WebSockets", "routing.md": "Routing", "endpoints.md": "Endpoints",
    "middleware.md": "Middleware", "staticfiles.md": "Static Files", "templates.md": "Templates",
    "database.md": "Database", "graphql.md": "GraphQL", "authentication.md": "Authentication",
    "schemas.md": "API Schemas", "lifespan.md": "Lifespan", "background.md": "Background Tasks",
    "server-push.md": "Server Push", "exceptions.md": "Exceptions", "config.md": "Configuration",
    "threadpool.md": "Thread Pool", "testclient.md": "Test Client", "release-notes.md": "Release Notes",
    "third-party-packages.md": "Third Party Packages", "contributing.md": "Contributing",
}
"""Every page kept (``sponsorship.md``, the funding appeal, is left out)."""
_API_REFERENCE = re.compile(r'^[?!]{3}\+?\s+abstract\s+"API Reference"\s*$')
_STAR_INCLUDE = re.compile(r"^(?P<indent>[ \t]*)\{\*[ \t]*(?P<path>\S+)(?P<args>.*?)\*\}[ \t]*$")
_BANG_INCLUDE = re.compile(r"^(?P<indent>[ \t]*)\{!>?[ \t]*(?P<path>[^!\s][^!]*?)[ \t]*!\}[ \t]*$")
_LINES_ARG = re.compile(r"\bln\[(?P<spans>[\d:,\s]+)\]")
_FENCE_LANGUAGE = {".py": "python", ".js": "javascript", ".html": "jinja", ".css": "css", ".toml": "toml"}


def page_entry(page_id: str, text: str, fallback_title: str | None = None) -> dict[str, str]:
    """The corpus line of one page."""
    title = first_h1(text) or fallback_title
    if not title:
        raise SystemExit(f"{page_id}: no '# ' heading and no navigation title")
    return {"_id": page_id, "title": title, "text": text, "mime": MIME}


def build_httpx(docs: Path) -> list[dict[str, str]]:
    """Every page under the httpx ``docs/`` folder."""
    pages = sorted(path.relative_to(docs).as_posix() for path in docs.rglob("*.md"))
    return [page_entry(page, (docs / page).read_text(encoding="utf-8"), HTTPX_NAV_TITLES.get(page)) for page in pages]


def fastapi_pages(names: Iterable[str]) -> list[str]:
    """The English pages kept: the four guide sections and the top-level guides, minus link pages."""
    kept = []
    for name in names:
        if not (name.startswith(FASTAPI_DOCS) and name.endswith(".md")):
            continue
        page = name[len(FASTAPI_DOCS):]
        in_section = page.startswith(FASTAPI_SECTIONS) or page in FASTAPI_TOP_PAGES
        if in_section and page not in FASTAPI_SKIPPED:
            kept.append(page)
    return sorted(kept)


def inline_includes(text: str, read: Callable[[str], str]) -> str:
    """Replace FastAPI's include directives by the files they include; ``read`` takes a repository path."""
    out: list[str] = []
    for line in text.split("\n"):
        if star := _STAR_INCLUDE.match(line):
            path = _repo_path(star["path"])
            body = _select_lines(read(path), star["args"])
            language = _FENCE_LANGUAGE.get(Path(path).suffix, "")
            indent = star["indent"]
            fenced = [f"```{language}", *body.rstrip("\n").split("\n"), "```"]
            out.extend(indent + piece if piece else piece for piece in fenced)
        elif bang := _BANG_INCLUDE.match(line):  # already inside a fence of the page
            out.extend(read(_repo_path(bang["path"])).rstrip("\n").split("\n"))
        else:
            out.append(line)
    return "\n".join(out)


def _repo_path(reference: str) -> str:
    """``../../docs_src/x.py`` (relative to docs/en/) -> ``docs_src/x.py``."""
    parts = [part for part in reference.split("/") if part not in ("..", ".", "")]
    return "/".join(parts)


def _select_lines(source: str, args: str) -> str:
    """The ``ln[a:b,c]`` lines of ``source`` (1-based, inclusive), gaps shown as ``# ...``; all lines without it."""
    match = _LINES_ARG.search(args)
    if match is None:
        return source
    lines = source.split("\n")
    chosen: list[str] = []
    for span in match["spans"].replace(" ", "").split(","):
        first, _, last = span.partition(":")
        start, end = int(first), int(last or first)
        if chosen:
            chosen.append("# ...")
        chosen.extend(lines[start - 1:end])
    return "\n".join(chosen)


def _git(git_dir: Path, *args: str) -> str:
    """The output of a git command on the (bare) repository ``git_dir``."""
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True).stdout


def build_fastapi(git_dir: Path, commit: str) -> list[dict[str, str]]:
    """The kept English pages of a FastAPI repository (a bare git directory) at ``commit``."""
    def read(path: str) -> str:
        return _git(git_dir, "show", f"{commit}:{path}")

    names = _git(git_dir, "ls-tree", "-r", "--name-only", commit, FASTAPI_DOCS).split("\n")
    return [page_entry(page, inline_includes(read(FASTAPI_DOCS + page), read)) for page in fastapi_pages(names)]


def rst_title(text: str) -> str | None:
    """The first section title of a reST page: a text line underlined (and maybe overlined) by punctuation."""
    lines = text.split("\n")
    for line, below in pairwise(lines):
        title = line.strip()
        if not title or _RST_UNDERLINE.match(line) or not _RST_UNDERLINE.match(below):
            continue
        field = line.startswith(":") and not _RST_ROLE.match(line)  # ":orphan:", not ":mod:`os` --- ..."
        if len(below.rstrip()) >= len(title) and not line.startswith((" ", "\t", "..")) and not field:
            return title
    return None


def build_flask(git_dir: Path, commit: str) -> list[dict[str, str]]:
    """Every reST page under Flask's ``docs/`` at ``commit`` but :data:`FLASK_SKIPPED`, its text as written."""
    names = _git(git_dir, "ls-tree", "-r", "--name-only", commit, FLASK_DOCS).split("\n")
    pages = sorted(name[len(FLASK_DOCS):] for name in names if name.endswith(".rst"))
    entries = []
    for page in pages:
        if page in FLASK_SKIPPED:
            continue
        text = _git(git_dir, "show", f"{commit}:{FLASK_DOCS}{page}")
        title = rst_title(text)
        if not title:
            raise SystemExit(f"{page}: no section title")
        entries.append({"_id": page, "title": title, "text": text, "mime": PLAIN_MIME})
    return entries


def write_pdf_manuals(git_dir: Path, out: Path) -> None:
    """Copy the manuals of :data:`PDF_MANUALS` from a (bare) git directory of their repository into ``out/files``."""
    files = out / "files"
    files.mkdir(parents=True, exist_ok=True)
    for name, (path, commit, sha256) in PDF_MANUALS.items():
        data = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                              check=True, capture_output=True).stdout  # bytes: _git decodes text
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SystemExit(f"{commit}:{path}: sha256 differs from the one the questions were judged on")
        (files / name).write_bytes(data)
        print(f"{files / name}: {len(data)} bytes")


def strip_api_reference(text: str) -> str:
    """The page without its ``??? abstract "API Reference"`` blocks (an indented ``::: module.Class`` directive)."""
    out: list[str] = []
    skipping = False
    for line in text.split("\n"):
        if _API_REFERENCE.match(line):
            skipping = True
            continue
        if skipping and (not line.strip() or line[:1] in " \t"):
            continue
        skipping = False
        out.append(line)
    return "\n".join(out)


def build_starlette(git_dir: Path, commit: str) -> list[dict[str, str]]:
    """The kept pages of a Starlette repository (a bare git directory) at ``commit``."""
    names = _git(git_dir, "ls-tree", "--name-only", commit, STARLETTE_DOCS).split()
    pages = sorted(name[len(STARLETTE_DOCS):] for name in names if name.endswith(".md"))
    missing = set(STARLETTE_NAV_TITLES) - set(pages)
    if missing:
        raise SystemExit(f"pages missing at {commit}: {sorted(missing)}")
    return [page_entry(page, strip_api_reference(_git(git_dir, "show", f"{commit}:{STARLETTE_DOCS}{page}")),
                       STARLETTE_NAV_TITLES[page])
            for page in pages if page in STARLETTE_NAV_TITLES]


def build_pystdlib(git_dir: Path, commit: str) -> list[dict[str, str]]:
    """The :data:`PYSTDLIB_PAGES` of a CPython repository at ``commit``, reST unchanged, titles without markup."""
    entries = []
    for name in PYSTDLIB_PAGES:
        path = f"{PYSTDLIB_DOCS}{name}.rst"
        text = _git(git_dir, "show", f"{commit}:{path}")
        title = rst_title(text)
        if not title:
            raise SystemExit(f"{path}: no section title")
        plain = _RST_ROLE.sub(lambda match: match["target"], title)
        plain = plain.replace("\\ ", "").replace(" --- ", " \u2014 ")  # "\ " only separates markup from text
        entries.append({"_id": path[len("Doc/"):], "title": plain, "text": text, "mime": PLAIN_MIME})
    return entries


def write_corpus(entries: list[dict[str, str]], out: Path) -> None:
    """Write ``corpus.jsonl`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for entry in entries:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    print(f"{out / 'corpus.jsonl'}: {len(entries)} pages")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", choices=("httpx", "fastapi", "flask", "starlette", "pdf-manuals", "pystdlib"))
    parser.add_argument("source", type=Path, help="httpx: its docs/ folder; fastapi, flask, starlette, pdf-manuals, "
                        "pystdlib: a (bare) git directory (uthash's for pdf-manuals, CPython's for pystdlib)")
    parser.add_argument("--commit", default="HEAD", help="fastapi, flask, starlette, pystdlib: the revision to read")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.site == "pdf-manuals":
        write_pdf_manuals(args.source, args.out or HERE / "pdf-manuals")
    elif args.site == "httpx":
        write_corpus(build_httpx(args.source), args.out or HERE / "httpx-docs")
    elif args.site == "fastapi":
        write_corpus(build_fastapi(args.source, args.commit), args.out or HERE / "fastapi-docs")
    elif args.site == "starlette":
        write_corpus(build_starlette(args.source, args.commit), args.out or HERE / "starlette-docs")
    elif args.site == "pystdlib":
        write_corpus(build_pystdlib(args.source, args.commit), args.out or HERE / "pystdlib-ref")
    else:
        write_corpus(build_flask(args.source, args.commit), args.out or HERE / "flask-docs")


if __name__ == "__main__":
    main()
