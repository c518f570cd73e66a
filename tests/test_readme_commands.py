"""README.md's two set-up commands, and CI running exactly its test command (issue 25.6).

The test command builds llama.cpp (llama-cpp-python ships no wheel) for any x86-64 CPU with AVX2, not
natively for the machine that builds it: a native build on a CPU with AVX-512 and AMX died by SIGILL.
pip keys its cache of built wheels on the package version alone, whatever CMAKE_ARGS say (``--no-binary``
does not bypass it either), so the command passes ``--no-cache-dir``: the build always takes the flags.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from support.llm_server import PORTABLE_CMAKE_ARGS

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


def test_the_test_command_builds_llama_cpp_portably_and_never_from_a_cached_wheel():
    words = shlex.split(readme_commands()[1])
    assignments = [word for word in words if word.startswith("CMAKE_ARGS=")]
    assert assignments == [f"CMAKE_ARGS={PORTABLE_CMAKE_ARGS}"], words
    install = words[words.index(assignments[0]) + 1:]
    assert install[:2] == ["pip", "install"], install
    assert "--no-cache-dir" in install[:install.index("&&")]
    assert "-DGGML_NATIVE=OFF" in PORTABLE_CMAKE_ARGS.split()
