"""The answer path: retrieve (seed 003), cache, generation, citations, confidence, streaming (seeds 001, 002)."""
