"""MIME sniffing decides by content, not by file name."""

from __future__ import annotations

import pytest

from ragstream.documents.sniff import sniff_mime
from ragstream.errors import UnsupportedFileTypeError

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"


@pytest.mark.parametrize(
    ("data", "filename", "expected"),
    [
        (b"%PDF-1.7\n...", "report.pdf", "application/pdf"),
        (b"%PDF-1.4\n...", "renamed.txt", "application/pdf"),
        (b"<!DOCTYPE html><html><body><p>x</p></body></html>", "page.txt", "text/html"),
        (b"  <!-- c -->\n<html lang='en'><p>x</p></html>", "page", "text/html"),
        (b"<p>fragment</p>", "page.html", "text/html"),
        (b"# Title\n\nBody", "notes.md", "text/markdown"),
        (b"plain words only", "notes.markdown", "text/markdown"),
        (b"# Title\n\nBody", "notes", "text/markdown"),
        (b"```python\nx = 1\n```\n", "snippet", "text/markdown"),
        (b"# Title\n\nBody", "notes.txt", "text/plain"),
        (b"just some words", "notes", "text/plain"),
        ("\ufeffcaf\u00e9 au lait".encode(), "bom.txt", "text/plain"),
        (b"", "empty.txt", "text/plain"),
    ],
)
def test_sniffed_types(data: bytes, filename: str, expected: str) -> None:
    assert sniff_mime(data, filename) == expected


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (b"PK\x03\x04\x14\x00\x00\x00\x08\x00", "ZIP"),
        (b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 8, "ELF"),
        (b"text with a \x00 NUL byte", "binary"),
        (b"caf\xe9 latin-1", "binary"),
    ],
)
def test_binary_content_is_rejected_naming_the_type(data: bytes, named: str) -> None:
    with pytest.raises(UnsupportedFileTypeError, match=named):
        sniff_mime(data, "disguised.txt")


def test_markdown_extension_does_not_override_binary_content() -> None:
    assert sniff_mime(PNG, "image.md") == "image/png", "an image by content (read by OCR), whatever its name"
    with pytest.raises(UnsupportedFileTypeError, match="ELF"):
        sniff_mime(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 8, "notes.md")


SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><text>words</text></svg>'
DRAWIO_SVG = (b'<?xml version="1.0" encoding="UTF-8"?>\n<!-- drawn -->\n'
              b'<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n'
              b'<svg width="10" height="10"><text>label</text></svg>')


@pytest.mark.parametrize(
    ("data", "filename", "named"),
    [
        (SVG, "drawing.svg", "SVG image"),
        (SVG, "drawing.txt", "SVG image"),
        (DRAWIO_SVG, "diagram", "SVG image"),
        (b"plain words", "picture.svg", "SVG image"),
        (b"const x = 1;\n", "app.js", "script"),
        (b"export const x = 1;\n", "app.mjs", "script"),
        (b"print('hi')\n", "tool.py", "script"),
        (b"#!/usr/bin/env bash\necho hi\n", "run", "script"),
        (b"body { color: red; }\n", "site.css", "stylesheet"),
        (b"$c: red;\n", "site.scss", "stylesheet"),
        (b"not really an image", "logo.png", "image"),
    ],
)
def test_svg_scripts_stylesheets_and_images_never_become_text(data: bytes, filename: str, named: str) -> None:
    with pytest.raises(UnsupportedFileTypeError, match=named):
        sniff_mime(data, filename)


def test_html_with_inline_svg_is_still_html() -> None:
    page = b"<!DOCTYPE html><html><body><svg><circle r='1'/></svg><p>Text</p></body></html>"
    assert sniff_mime(page, "page.html") == "text/html"
