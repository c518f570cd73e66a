"""A small real folder of the kinds a documentation tree holds beside its Markdown.

SVG drawings (one with an XML declaration and doctype, as draw.io writes them), scripts,
stylesheets and raster images, next to Markdown pages. Used by the selection, CLI and ingest tests.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

MARKDOWN_PAGES = {
    "index.md": "# Welcome\n\nThis handbook explains how request timeouts work.\n",
    "guide/timeouts.md": "# Timeouts\n\nSet a connect timeout and a read timeout on every client.\n",
    "guide/retries.md": "# Retries\n\nRetry idempotent requests with exponential backoff.\n",
}
SVG_DRAWIO = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n'
    '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><text x="4" y="20">'
    "timeout diagram request client server</text></svg>\n"
)
SVG_PLAIN = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle r="4"/></svg>\n'
SCRIPT = "document.addEventListener('DOMContentLoaded', () => { console.log('timeouts'); });\n"
STYLESHEET = "body { font-family: sans-serif; }\n.timeout { color: red; }\n"


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8), creating its folders; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def png_bytes(width: int = 2, height: int = 2) -> bytes:
    """A valid PNG (RGB, all white) built from its chunks."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xff" * 3 * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


JPEG = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffd9")
NOT_DOCUMENTS = {
    "img/architecture.drawio.svg": SVG_DRAWIO,
    "img/icon.svg": SVG_PLAIN,
    "js/custom.js": SCRIPT,
    "js/termynal.js": SCRIPT,
    "css/custom.css": STYLESHEET,
}
IMAGES = {"img/logo.png": png_bytes(), "img/photo.jpg": JPEG}


def make_docs_folder(root: Path) -> Path:
    """Write the Markdown pages, SVG, JS, CSS and images under ``root``; returns ``root``."""
    for name, text in {**MARKDOWN_PAGES, **NOT_DOCUMENTS}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name, data in IMAGES.items():
        (root / name).write_bytes(data)
    return root
