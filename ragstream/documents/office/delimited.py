"""CSV and TSV with the standard csv module: encoding and dialect sniffed, rows as one Markdown table.

The encoding is UTF-8 (with or without BOM) or UTF-16 with a BOM, else what charset-normalizer finds; when it
finds several equally likely (short text), cp1252 wins: the encoding of most Windows and Excel exports. The
delimiter and quoting are sniffed by :class:`csv.Sniffer` from the first ``_SNIFF_CHARS`` characters among
``, ; TAB |`` (a TSV is always tab-separated); the first row is the header, and the markdown chunker repeats it
in every chunk of a long file. Rows past ``limits.max_table_rows`` refuse the file with ``file_too_large``.

The csv module builds a whole record before anyone can count its fields, so a 50 MB line of short fields would be a
list of millions of strings (gigabytes) before the column limit could see it. Each line is therefore counted first,
the way the csv module splits it (a quote opens a quoted field only at the start of a field, a doubled quote inside
one is a quote), with C-speed searches and at most ``limits.max_table_columns`` + 1 steps; a record with more
fields is refused with ``file_too_large`` before the csv module sees it. Text past ``limits.max_document_chars``
refuses the file with ``document_too_large`` at the first row past it.
"""

from __future__ import annotations

import codecs
import csv
import re
from collections.abc import Iterator

from charset_normalizer import from_bytes

from ragstream.documents.mimes import TSV
from ragstream.documents.office import text as md
from ragstream.errors import CorruptDocumentError, FileTooLargeError
from ragstream.models import Page

_SNIFF_CHARS = 64 * 1024  # csv.Sniffer reads a sample; a few dozen lines decide the dialect
_DELIMITERS = ",;\t|"
_PREFERRED = "cp1252"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")  # a line and its ending, as the csv module wants them
_SPACES = re.compile(" *")
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def read_delimited(data: bytes, name: str, mime: str, *, max_rows: int, max_columns: int,
                   max_chars: int | None = None) -> md.Extracted:
    """The file's rows as one page holding a Markdown table (no title: the file name names it)."""
    text = decode(data, name)
    dialect = _dialect(text, mime)
    budget = md.RowBudget(name, max_rows, max_columns, max_chars)
    lines = _counted_lines(text, dialect, name, max_columns)
    try:
        grid = md.trim_grid(budget.take(csv.reader(lines, dialect)))
    except FileTooLargeError:
        raise
    except csv.Error as exc:
        raise CorruptDocumentError(f"{name}: cannot parse the {'TSV' if mime == TSV else 'CSV'} file: {exc}") from exc
    return md.Extracted(pages=(Page(number=None, text=md.table(grid)),) if grid else ())


def _counted_lines(text: str, dialect: type[csv.Dialect] | csv.Dialect, name: str, max_columns: int) -> Iterator[str]:
    """The lines of ``text`` for the csv module; raises :class:`FileTooLargeError` before handing on a line that
    takes its record past ``max_columns`` fields (see the module doc)."""
    delimiter = dialect.delimiter or ","
    quote = dialect.quotechar if dialect.quoting != csv.QUOTE_NONE else None
    fields, quoted = 1, False  # fields of the record so far; inside a quoted field at the end of the last line
    for match in _LINE.finditer(text):
        line = match.group()
        if not line:
            continue
        fields, quoted = _fields(line, fields, quoted, delimiter, quote, max_columns, bool(dialect.skipinitialspace))
        if fields > max_columns:
            raise md.too_many_columns(name, f"more than {max_columns}", max_columns)
        yield line
        if not quoted:
            fields = 1


def _fields(line: str, fields: int, quoted: bool, delimiter: str, quote: str | None, limit: int,
            skip_spaces: bool) -> tuple[int, bool]:
    """The record's field count after ``line`` (stopping past ``limit``) and whether a quoted field is still open."""
    position, end = 0, len(line)
    while end and line[end - 1] in "\r\n":  # the line ending (no copy of a long line)
        end -= 1
    at_start = not quoted
    while position < end and fields <= limit:
        if at_start and skip_spaces:
            position = _SPACES.match(line, position).end()  # type: ignore[union-attr]  # " *" always matches
        if quoted:
            close = line.find(quote, position, end) if quote else -1
            if close < 0:
                return fields, True
            if line.startswith(quote, close + 1):  # type: ignore[arg-type]  # a doubled quote: still inside
                position = close + 2
                continue
            quoted, at_start, position = False, False, close + 1
        elif at_start and quote and line.startswith(quote, position):
            quoted, position = True, position + 1
        else:
            separator = line.find(delimiter, position, end)
            if separator < 0:
                return fields, False
            fields, at_start, position = fields + 1, True, separator + 1
    return fields, quoted


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
