"""The vendored pdf.js (``ragstream/server/static/vendor/pdfjs``) is the version and the bytes its README names, with
its licence, and every file of the web UI is package data (a wheel without the worker draws no PDF)."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

import ragstream

PACKAGE = Path(ragstream.__file__).parent
STATIC = PACKAGE / "server" / "static"
PDFJS = STATIC / "vendor" / "pdfjs"
ROOT = PACKAGE.parent


def test_vendored_pdfjs_is_what_its_readme_names():
    readme = (PDFJS / "README.md").read_text()
    version = re.search(r"`pdfjs-dist` \*\*([0-9.]+)\*\*", readme)
    assert version, "the README names no pdfjs-dist version"
    for name in ("pdf.min.mjs", "pdf.worker.min.mjs"):
        data = (PDFJS / name).read_bytes()
        assert f'"{version.group(1)}"'.encode() in data, f"{name} is not pdf.js {version.group(1)}"
        assert f"`{name}` {hashlib.sha256(data).hexdigest()}" in readme, f"{name}'s sha256 is not the README's"
    assert "Apache License" in (PDFJS / "LICENSE").read_text()


def test_every_web_ui_file_is_package_data():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["ragstream"]
    packaged = {path for pattern in patterns for path in PACKAGE.glob(pattern) if path.is_file()}
    missing = [str(path.relative_to(PACKAGE)) for path in STATIC.rglob("*") if path.is_file() and path not in packaged]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
