"""A folder of real symlinks and special files, as a careless user or an attacker leaves them: links to a sibling
folder's file and to a file elsewhere on the machine (an ``/etc/passwd`` stand-in), a link inside the folder, a
link to a folder, a broken link, symlink loops (a -> b -> a, and a link to itself), a link to a hidden file and a
FIFO. The selection, sync, watch and CLI tests of ``ingest.follow_symlinks`` use it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from support.folder_corpus import write_text
from support.server_process import FAST_SETTINGS, SERVE_WITH_HASH_EMBEDDER, server_env

SECRET_WORD = "xylophonesecret"
"""A word only the files outside the folder hold: found by a search means a link was followed out."""
CLI_SECONDS = 180.0
"""How long one ``ragstream`` command may take (generous: two cores shared with other test runs)."""


DEFAULT_TAKEN = ("alias.md", "guide.md", "real.md")
"""The names a default folder walk takes (``alias.md`` links to ``inner/real.md``, inside the folder)."""
DEFAULT_SKIPPED = {"sibling.md": "symlink_outside_root", "passwd.txt": "symlink_outside_root",
                   "loop_a.md": "symlink_loop", "loop_b.md": "symlink_loop", "self.md": "symlink_loop",
                   "broken.md": "broken_symlink", "elsewhere": "folder_symlink", "pipe.md": "special_file",
                   "to_hidden.md": "hidden", ".hidden": "hidden"}
"""The entries a default folder walk skips, by name, with their reason."""


@dataclass(frozen=True)
class LinkedFolder:
    """The folder given to ingest or sync (``docs``) and what lies beside it."""

    docs: Path
    sibling_secret: Path
    """A file in a sibling folder, which ``docs/sibling.md`` links to."""
    system_secret: Path
    """A stand-in for ``/etc/passwd`` outside the test's folders' parent, which ``docs/passwd.txt`` links to."""


def make_linked_folder(tmp_path: Path) -> LinkedFolder:
    """Write the folder under ``tmp_path / "tree"`` (the system secret under ``tmp_path / "system"``)."""
    tree = tmp_path / "tree"
    docs = tree / "docs"
    write_text(docs / "guide.md", "# Guide\n\nSet a read timeout so a stalled server never blocks the client.\n")
    write_text(docs / "inner" / "real.md", "# Real\n\nConnection pools keep sockets open between requests.\n")
    write_text(docs / ".hidden" / "note.md", f"# Hidden\n\nA hidden note about {SECRET_WORD} tokens.\n")
    sibling = write_text(tree / "private" / "secret.md", f"# Private\n\nThe sibling's {SECRET_WORD} password.\n")
    system = write_text(tmp_path / "system" / "passwd", f"root:x:0:0:{SECRET_WORD}:/root:/bin/bash\n")
    os.symlink("inner/real.md", docs / "alias.md")
    os.symlink("../private/secret.md", docs / "sibling.md")
    os.symlink(system, docs / "passwd.txt")
    os.symlink("loop_b.md", docs / "loop_a.md")
    os.symlink("loop_a.md", docs / "loop_b.md")
    os.symlink("self.md", docs / "self.md")
    os.symlink("missing.md", docs / "broken.md")
    os.symlink("../private", docs / "elsewhere")
    os.symlink(".hidden/note.md", docs / "to_hidden.md")
    os.mkfifo(docs / "pipe.md")
    return LinkedFolder(docs=docs, sibling_secret=sibling, system_secret=system)


def run_cli(data_dir: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """The real ``ragstream`` command line in its own process on the hash embedder, on the index at ``data_dir``
    (``settings``: more ``RAGSTREAM_*`` settings, e.g. ``INGEST__FOLLOW_SYMLINKS="always"``)."""
    env = server_env(data_dir, **{**FAST_SETTINGS, **settings})
    return subprocess.run([sys.executable, "-c", SERVE_WITH_HASH_EMBEDDER, *args], env=env, capture_output=True,
                          text=True, timeout=CLI_SECONDS)
