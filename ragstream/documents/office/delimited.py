"""CSV and TSV with the standard csv module: encoding and dialect sniffed, rows as one Markdown table.

The encoding is UTF-8 (with or without BOM) or UTF-16 with a BOM, else what charset-normalizer finds; when it
finds several equally likely (short text), cp1252 wins: the encoding of most Windows and Excel exports. The
delimiter and quoting are sniffed by :class:`csv.Sniffer` from the first ``_SNIFF_CHARS`` characters among
``, ; TAB |`` (a TSV is always tab-separated); the first row is the header, and the markdown chunker repeats it
in every chunk of a long file. Rows past ``limits.max_table_rows`` refuse the file with ``file_too_large``.
"""

from __future__ import annotations

import codecs
import csv
import io

from charset_normalizer import from_bytes

from ragstream.documents.mimes import TSV
from ragstream.documents.office import text as md
from ragstream.errors import CorruptDocumentError, FileTooLargeError
from ragstream.models import Page

_SNIFF_CHARS = 64 * 1024  # csv.Sniffer reads a sample; a few dozen lines decide the dialect
_DELIMITERS = ",;\t|"
_PREFERRED = "cp1252"
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def read_delimited(data: bytes, name: str, mime: str, *, max_rows: int, max_columns: int) -> md.Extracted:
    """The file's rows as one page holding a Markdown table (no title: the file name names it)."""
    text = decode(data, name)
    dialect = _dialect(text, mime)
    budget = md.RowBudget(name, max_rows, max_columns)
    try:
        grid = md.trim_grid(budget.take(csv.reader(io.StringIO(text, newline=""), dialect)))
    except FileTooLargeError:
        raise
    except csv.Error as exc:
        raise CorruptDocumentError(f"{name}: cannot parse the {'TSV' if mime == TSV else 'CSV'} file: {exc}") from exc
    return md.Extracted(pages=(Page(number=None, text=md.table(grid)),) if grid else ())


def decode(data: bytes, name: str) -> str:
    """The bytes as text: a BOM's encoding, else UTF-8, else the encoding charset-normalizer detects."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _decode(data, encoding, name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    matches = from_bytes(data)
    best = matches.best()
    if best is None or best.encoding is None:
        raise CorruptDocumentError(f"{name}: the text is in no encoding that could be detected")
    tied = {match.encoding for match in matches if (match.chaos, match.coherence) == (best.chaos, best.coherence)}
    return _decode(data, _PREFERRED if _PREFERRED in tied else best.encoding, name)


def _decode(data: bytes, encoding: str, name: str) -> str:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise CorruptDocumentError(f"{name}: the text is not valid {encoding}: {exc}") from exc


def _dialect(text: str, mime: str) -> type[csv.Dialect] | csv.Dialect:
    if mime == TSV:
        return csv.excel_tab
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS and "\n" in sample:
        sample = sample[:sample.rindex("\n")]  # whole lines only
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS)
    except csv.Error:  # one column, or too few lines to tell: the comma
        return csv.excel
