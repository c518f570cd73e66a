"""Sentence support: does each sentence of an answer say what the passages it cites say?

An answer's sentences (:mod:`.sentences`), the cheap signals (:mod:`.signals`), the checker that turns
them into a verdict per sentence (:mod:`.checker`), the optional LLM judge (:mod:`.judge`) and the run
that checks an answer as it streams in (:mod:`.run`). The answer path (``ragstream.answer``) calls it;
it reads the answer's data types (``ragstream.answer.models``) and nothing else of that package's flow.
"""
