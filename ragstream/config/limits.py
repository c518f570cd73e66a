"""``limits``: size limits applied to inputs before any parsing (docs/http-api.md, docs/formats.md)."""

from __future__ import annotations

from pydantic import Field

from ragstream.config.base import ConfigSection


class LimitsConfig(ConfigSection):
    """Size limits applied to inputs before any parsing."""

    max_file_bytes: int = Field(50 * 1024 * 1024, description="Largest single file accepted, in bytes.")
    max_request_bytes: int = Field(200 * 1024 * 1024, description="Largest upload request accepted, in bytes.")
    max_query_chars: int = Field(2000, description="Longest query accepted, in characters.")
    max_pdf_pages: int = Field(
        2000, ge=1, description="PDFs with more pages (counted in the page tree before any text is read) are "
        "refused with document_too_large.")
    max_document_chars: int = Field(
        5_000_000, ge=1, description="Documents whose extracted text is longer, in characters, are refused "
        "(document_too_large); extraction stops as soon as the limit is passed.")
    max_chunks_per_document: int = Field(
        5000, ge=1, description="Documents cut into more chunks are refused (document_too_large) before embedding.")
    max_json_body_bytes: int = Field(
        1024 * 1024, ge=1, description="Largest JSON (non-upload) request body, in bytes; larger ones get 413 "
        "request_too_large.")
    max_json_depth: int = Field(
        32, ge=2, le=500, description="Deepest nesting of objects and arrays in a JSON request body (the body itself "
        "is level 1); deeper ones get 400 json_too_deep. At most 500: the JSON parser recurses once per level.")
    max_json_number_chars: int = Field(
        100, ge=20, description="Longest number in a JSON request body, in characters as written (sign, digits, "
        "point, exponent); longer ones get 400 json_number_too_large (a 64-bit integer takes 20).")
    min_free_disk_bytes: int = Field(
        64 * 1024 * 1024, ge=0, description="Writes (uploads, ingest batches, job records) first check that the data "
        "and upload directories keep this many bytes free after the write; else 507 insufficient_storage.")
    max_archive_bytes: int = Field(
        256 * 1024 * 1024, ge=1, description="Zipped documents (.docx, .pptx, .xlsx, OpenDocument, EPUB) whose entries "
        "add up to more bytes uncompressed are refused (document_too_large) before any entry is decompressed: "
        "the bound on zip bombs.")
    max_archive_entries: int = Field(
        10_000, ge=1, description="Zipped documents with more entries (files inside the zip) are refused "
        "(document_too_large) before any entry is read.")
    max_table_rows: int = Field(
        100_000, ge=1, description="Spreadsheets (all visible sheets together) and CSV/TSV files with more rows are "
        "refused with file_too_large; reading stops at the first row past the limit.")
    max_table_columns: int = Field(
        1_000, ge=1, description="Columns read per sheet or CSV row; a row with more fails the file with "
        "file_too_large.")
    max_xml_depth: int = Field(
        256, ge=8, le=600, description="Deepest nesting of elements (levels) read in an XML part of a Word, PowerPoint, "
        "OpenDocument or EPUB file; deeper ones refuse the file with document_too_large as soon as the parser gets "
        "there. At most 600: the readers follow the nesting with one call per level.")
    max_xml_elements: int = Field(
        1_000_000, ge=1, description="XML elements read over all the parts of one Word, PowerPoint, OpenDocument or "
        "EPUB file, or tags in one HTML page; the file is refused (document_too_large) at the first element past the "
        "limit, before a document model is built.")
    max_read_seconds: float = Field(
        30.0, gt=0, description="Seconds one HTML page, EPUB book or PowerPoint deck may take to turn into text "
        "(the readers whose work per element runs in Python); past them the document is refused "
        "(document_too_large). Checked as the file is read, tag by tag or shape by shape.")
