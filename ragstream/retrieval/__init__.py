"""Dense, BM25 and hybrid retrieval."""
