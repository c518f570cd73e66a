"""``support/required.py``: a missing wheel or model skips the test, and fails it when its ``RAGSTREAM_REQUIRE_*``
variable is 1 (as in CI); and no test skips on a missing wheel or model any other way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragstream.errors import ModelPackageMissingError
from support.required import EXTRAS, LLAMA, packaged_model, require_module, unavailable

MISSING = "ragstream_no_such_module"
TESTS = Path(__file__).resolve().parents[1]
SKIPS = re.compile(r"pytest\.skip\(|importorskip\(|mark\.skipif\(")
ALLOWED_SKIPS = {
    # file (under tests/): why it may skip without failing in CI
    "conftest.py": "../shared/data is absent (the real data beside the repo)",
    "documents/test_documents_real_data.py": "a folder of ../shared/data is absent",
    "documents/test_folder_links.py": "root reads files whatever their permissions",
    "server/test_server_hardening.py": "mounting a tmpfs needs root",
    "store/test_store_contract.py": "the embedded store is the reference it is compared with",
    "support/qdrant_backend.py": "a Qdrant server is opt-in (RAGSTREAM_TEST_QDRANT_URL); no binary is installable",
    "support/required.py": "the one place a missing wheel or model skips",
}


def test_a_missing_module_skips_and_fails_when_required(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(EXTRAS, raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"{MISSING} is not installed: pip install it"):
        require_module(MISSING, "pip install it", EXTRAS)
    monkeypatch.setenv(EXTRAS, "1")
    with pytest.raises(pytest.fail.Exception, match=rf"{MISSING} is not installed: pip install it \({EXTRAS}=1\)"):
        require_module(MISSING, "pip install it", EXTRAS)


def test_a_missing_packaged_model_fails_when_llama_is_required(monkeypatch: pytest.MonkeyPatch):
    def locate() -> Path:
        raise ModelPackageMissingError("the package llm-nothing is not installed")

    monkeypatch.delenv(LLAMA, raising=False)
    with pytest.raises(pytest.skip.Exception, match="llm-nothing is not installed"):
        packaged_model(locate)
    monkeypatch.setenv(LLAMA, "1")
    with pytest.raises(pytest.fail.Exception, match=rf"llm-nothing is not installed \({LLAMA}=1\)"):
        packaged_model(locate)
    assert packaged_model(lambda: TESTS) == TESTS  # found: no skip, no failure


def test_any_other_variable_value_skips(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(LLAMA, "0")
    with pytest.raises(pytest.skip.Exception, match="the model's answer was replaced"):
        unavailable("the model's answer was replaced", LLAMA)


def test_no_test_skips_on_a_wheel_or_model_but_through_required():
    skipping = {path.relative_to(TESTS).as_posix() for path in TESTS.rglob("*.py")
                if path.name != Path(__file__).name and SKIPS.search(path.read_text())}
    assert skipping <= set(ALLOWED_SKIPS), (
        "skip a missing wheel or model with support.required.unavailable (a failure in CI), or add the file "
        f"to ALLOWED_SKIPS with the reason its skip is allowed: {sorted(skipping - set(ALLOWED_SKIPS))}")
