"""Where agent sessions live, and the session files a list of paths names.

With no path, ``cachecast usage`` reads the default locations (docs/usage-report.md):
``$CLAUDE_CONFIG_DIR`` (a comma-separated list of Claude Code configuration folders, each
holding ``projects/``) or else ``~/.claude/projects`` (and ``~/.config/claude/projects``, where
newer Claude Code versions write), and under ``$CODEX_HOME`` (comma-separated too) or else
``~/.codex``: ``sessions/`` and ``archived_sessions/`` (where Codex moves a session the user
archives; docs/clients.md), and Gemini CLI's ``.gemini/tmp`` under ``$GEMINI_CLI_HOME`` or
else ``~`` (its recordings lie in ``<project hash>/chats/``; Gemini CLI's ``homedir()``,
``packages/core/src/utils/paths.ts``).
A location that does not exist is left out. A path given is a file, a folder (every
``*.jsonl`` under it, and every ``*.jsonl.gz`` / ``.zst`` / ``.bz2`` / ``.xz``: sessions kept
compressed; and Gemini CLI's older recordings, ``chats/session-*.json``; sorted) or a glob.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from cachecast.core.errors import BadInputError, Location
from cachecast.logs.compressed import SUFFIXES

# The names of session files in a folder: JSON lines, plain or compressed.
SESSION_NAMES = (".jsonl", *(f".jsonl{suffix}" for suffix in SUFFIXES))


def _sessions_under(folder: Path) -> list[Path]:
    found = [
        path
        for path in folder.rglob("*.jsonl*")
        if path.name.lower().endswith(SESSION_NAMES) and path.is_file()
    ]
    # Gemini CLI wrote one JSON document per session before its JSON lines (docs/clients.md).
    found += [path for path in folder.rglob("chats/session-*.json") if path.is_file()]
    return sorted(found)


CLAUDE_CONFIG_ENV = "CLAUDE_CONFIG_DIR"
CODEX_HOME_ENV = "CODEX_HOME"
CODEX_FOLDERS = ("sessions", "archived_sessions")
GEMINI_HOME_ENV = "GEMINI_CLI_HOME"


def default_locations(env: Mapping[str, str], home: Path) -> list[Path]:
    """The session folders the module docstring lists, those that exist."""
    claude: list[Path] = []
    configured = env.get(CLAUDE_CONFIG_ENV, "").strip()
    if configured:
        claude = [Path(part.strip()) / "projects" for part in configured.split(",") if part.strip()]
    else:
        claude = [home / ".claude" / "projects", home / ".config" / "claude" / "projects"]
    configured = env.get(CODEX_HOME_ENV, "").strip()
    homes = [Path(part.strip()) for part in configured.split(",") if part.strip()]
    codex = [
        codex_home / folder for codex_home in homes or [home / ".codex"] for folder in CODEX_FOLDERS
    ]
    gemini = Path(env.get(GEMINI_HOME_ENV, "").strip() or home) / ".gemini" / "tmp"
    seen: set[Path] = set()
    found = []
    for folder in [*claude, *codex, gemini]:
        if folder.is_dir() and folder.resolve() not in seen:
            seen.add(folder.resolve())
            found.append(folder)
    return found


def session_files(paths: Sequence[str | Path]) -> list[Path]:
    """The session files ``paths`` name: files as given, folders walked (``*.jsonl``, plain
    or compressed), globs expanded; each file once. A path that names nothing is bad input."""
    files: list[Path] = []
    seen: set[Path] = set()

    def add(path: Path) -> None:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            files.append(path)

    for given in paths:
        path = Path(given)
        text = str(given)
        if path.is_dir():
            for found in _sessions_under(path):
                add(found)
        elif path.is_file():
            add(path)
        elif any(char in text for char in "*?["):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise BadInputError(
                    f"no file matches {text!r}", location=Location(source=text, field="paths")
                )
            for match in matches:
                found = Path(match)
                if found.is_dir():
                    for inner in _sessions_under(found):
                        add(inner)
                elif found.is_file():
                    add(found)
        else:
            raise BadInputError(
                "no such file or folder", location=Location(source=text, field="paths")
            )
    return files


def find_sessions(paths: Sequence[str | Path], env: Mapping[str, str] | None = None) -> list[Path]:
    """:func:`session_files` of ``paths``, or of the default locations when none is given
    (bad input when none exists: the message names where it looked)."""
    if paths:
        return session_files(paths)
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    folders = default_locations(env, home)
    if not folders:
        looked = (
            f"${CLAUDE_CONFIG_ENV}/projects"
            if env.get(CLAUDE_CONFIG_ENV)
            else "~/.claude/projects, ~/.config/claude/projects"
        )
        codex = f"${CODEX_HOME_ENV}" if env.get(CODEX_HOME_ENV) else "~/.codex"
        codex = f"{codex}/sessions, {codex}/archived_sessions"
        gemini = f"${GEMINI_HOME_ENV}" if env.get(GEMINI_HOME_ENV) else "~"
        raise BadInputError(
            f"no session folder found (looked in {looked}, {codex} and {gemini}/.gemini/tmp);"
            " name files or folders",
            location=Location(field="paths"),
        )
    return session_files(folders)
