"""Readers of office and packaged formats: Word, PowerPoint, Excel, OpenDocument, EPUB and CSV/TSV.

Each writes Markdown-flavoured text (``#`` headings, Markdown tables) so the markdown chunker keeps the
structure: headings become ``header_path``, a slide or sheet is a section, a long table's header row is
repeated in each of its chunks. Zipped formats pass :func:`~ragstream.documents.office.archive.check_archive`
(the zip-bomb bound) before anything in them is decompressed.
"""
