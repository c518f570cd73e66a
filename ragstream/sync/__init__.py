"""Folder sync and watch: keep the index in step with folders as their files come, change, move and go
(``ragstream sync``, ``ragstream watch``, ``ragstream serve --watch``; docs/cli.md)."""
