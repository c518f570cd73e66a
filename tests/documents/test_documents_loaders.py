"""Loading crafted files: text formats, metadata, and every bad-file error."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from uuid import NAMESPACE_URL, uuid5

import pytest
from pypdf import PdfWriter

from ragstream.config import LimitsConfig, RagstreamConfig
from ragstream.documents import chunk_document, load_bytes, load_file
from ragstream.documents.document_titles import is_document_title
from ragstream.errors import (
    CorruptDocumentError,
    DocumentError,
    EmptyDocumentError,
    EncryptedDocumentError,
    FileTooLargeError,
)

CONFIG = RagstreamConfig()


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def blank_pdf(password: str | None = None) -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    if password is not None:
        writer.encrypt(user_password=password, owner_password="owner")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_markdown_with_front_matter(tmp_path: Path) -> None:
    text = "---\ntitle: Front Title\nversion: 2\ndate: 2024-05-01\ntags: [a, b]\n---\n# Heading\n\nBody.\n"
    path = write(tmp_path, "guide.md", text)
    doc = load_file(path, CONFIG, metadata={"version": "user"})
    assert doc.mime == "text/markdown"
    assert doc.title == "Front Title"
    assert doc.metadata == {"title": "Front Title", "version": "user", "date": "2024-05-01"}
    assert doc.text == "# Heading\n\nBody.\n"
    assert len(doc.pages) == 1 and doc.pages[0].number is None
    assert doc.source == str(path.resolve())
    assert doc.document_id == str(uuid5(NAMESPACE_URL, "ragstream:" + str(path.resolve())))
    assert doc.checksum == hashlib.sha256(text.encode()).hexdigest()
    assert doc.size_bytes == len(text.encode())


def test_markdown_title_is_first_h1_outside_fences(tmp_path: Path) -> None:
    path = write(tmp_path, "a.md", "Intro\n\n```\n# not this\n```\n\n## Sub\n\n# Real Title\n")
    assert load_file(path, CONFIG).title == "Real Title"


def test_leading_rule_is_not_front_matter(tmp_path: Path) -> None:
    text = "---\n\nSome text after a rule.\n\n---\n\nMore.\n"
    doc = load_file(write(tmp_path, "rule.md", text), CONFIG)
    assert doc.text == text and doc.metadata == {}


def test_plain_text_strips_bom_and_uses_stem_title(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.txt", "\ufeffLine one\r\nLine two\r\n".encode())
    doc = load_file(path, CONFIG, document_id="my-id")
    assert (doc.mime, doc.title, doc.text, doc.document_id) == ("text/plain", "notes", "Line one\nLine two\n", "my-id")


def test_html_drops_scripts_and_turns_headings_into_markdown(tmp_path: Path) -> None:
    html = """<!DOCTYPE html><html><head><title>Page Title</title><style>p{}</style></head>
    <body><nav>Home | About</nav><script>alert('x')</script>
    <h1>Main</h1><p>First <b>bold</b> paragraph.</p>
    <h2>Details</h2><p>More text.</p><pre>def f():
    return 1</pre></body></html>"""
    doc = load_file(write(tmp_path, "page.html", html), CONFIG)
    assert doc.mime == "text/html" and doc.title == "Page Title"
    assert "alert" not in doc.text and "Home | About" not in doc.text and "p{}" not in doc.text
    assert "# Main\n\nFirst bold paragraph." in doc.text
    assert "```\ndef f():\n    return 1\n```" in doc.text
    pieces = chunk_document(doc, CONFIG.chunking)
    assert [p.header_path for p in pieces] == [("Main",), ("Main", "Details")]


def test_load_bytes_uses_given_source(tmp_path: Path) -> None:
    doc = load_bytes(b"hello upload", "up.txt", CONFIG, source="upload://u1/up.txt")
    assert doc.source == "upload://u1/up.txt"
    assert doc.document_id == str(uuid5(NAMESPACE_URL, "ragstream:upload://u1/up.txt"))


@pytest.mark.parametrize(
    ("name", "data"), [("empty.txt", b""), ("blank.md", b" \n\t\n  "), ("bom.txt", b"\xef\xbb\xbf\n")]
)
def test_empty_files_raise_empty_document(tmp_path: Path, name: str, data: bytes) -> None:
    with pytest.raises(EmptyDocumentError):
        load_file(write(tmp_path, name, data), CONFIG)


def test_empty_html_raises_empty_document(tmp_path: Path) -> None:
    with pytest.raises(EmptyDocumentError):
        load_file(write(tmp_path, "e.html", "<html><script>x()</script></html>"), CONFIG)


def test_corrupt_pdf(tmp_path: Path) -> None:
    with pytest.raises(CorruptDocumentError):
        load_file(write(tmp_path, "bad.pdf", b"%PDF-1.4\n" + bytes(range(256)) * 4), CONFIG)


def test_truncated_pdf_is_corrupt(tmp_path: Path) -> None:
    with pytest.raises(CorruptDocumentError):
        load_file(write(tmp_path, "cut.pdf", blank_pdf()[:300]), CONFIG)


def test_encrypted_pdf(tmp_path: Path) -> None:
    with pytest.raises(EncryptedDocumentError):
        load_file(write(tmp_path, "locked.pdf", blank_pdf(password="secret")), CONFIG)


def test_pdf_without_text_is_empty(tmp_path: Path) -> None:
    with pytest.raises(EmptyDocumentError):
        load_file(write(tmp_path, "blank.pdf", blank_pdf()), CONFIG)


def test_owner_only_encryption_opens_with_empty_password(tmp_path: Path) -> None:
    # Opens (empty user password) and then has no text: EmptyDocumentError, not Encrypted.
    with pytest.raises(EmptyDocumentError):
        load_file(write(tmp_path, "owner.pdf", blank_pdf(password="")), CONFIG)


def test_broken_png_renamed_txt_is_read_as_an_image_and_refused_as_corrupt(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 20
    with pytest.raises(CorruptDocumentError, match="cannot decode the image"):
        load_file(write(tmp_path, "photo.txt", png), CONFIG)


def test_oversized_file(tmp_path: Path) -> None:
    config = RagstreamConfig(limits=LimitsConfig(max_file_bytes=10))
    path = write(tmp_path, "big.txt", "x" * 11)
    with pytest.raises(FileTooLargeError, match="11 bytes"):
        load_file(path, config)
    with pytest.raises(FileTooLargeError):
        load_bytes(b"x" * 11, "big.txt", config, source="upload")
    assert load_file(write(tmp_path, "ok.txt", "x" * 10), config).size_bytes == 10


def test_missing_file_is_a_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError):
        load_file(tmp_path / "nope.txt", CONFIG)


def test_the_bundled_federal_register_pdf_is_titled_by_its_display_line() -> None:
    sample = Path(__file__).resolve().parents[2] / "ragstream" / "samples" / "docs" / "federal-register-2020-17221.pdf"
    assert load_file(sample, CONFIG).title == "Proposed Rules"  # its first text line is a sidebar


def test_a_pdf_title_never_is_a_generic_heading_or_file_name() -> None:
    assert not is_document_title("Contents") and not is_document_title("Microsoft Word - report.docx") and not is_document_title("")
    assert is_document_title("Two-Column Document with Lorem Ipsum")
