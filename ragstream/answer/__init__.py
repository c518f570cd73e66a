"""The answer path: retrieve, cache, generation, citations, confidence, streaming."""
