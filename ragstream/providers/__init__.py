"""Pluggable providers: embedders, rerankers and the LLM client.

Models never download at run time: the Hugging Face hub is switched to offline mode before any
model library is imported, so weights come from installed packages or local paths only.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
