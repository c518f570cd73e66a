"""The write path below the facade: one :class:`~ragstream.writes.service.WriteService` checks the writer's
right to write where they write, for every surface (the CLI's ingest, sync and watch, HTTP uploads and their
background jobs, MCP's ingest); uploads are stored, sniffed, ingested and queued here, the server only reads
the request and answers it."""
