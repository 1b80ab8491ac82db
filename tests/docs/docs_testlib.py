"""Reading fenced code blocks out of the Markdown docs (helpers of the docs tests)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Block", "Command", "console_commands", "fenced_blocks", "file_blocks", "missing_lines", "normalize"]

_TITLE = re.compile(r'^(?P<lang>[\w+-]+)\s+title="(?P<path>[^"]+)"\s*$')


@dataclass(frozen=True)
class Block:
    """A fenced code block: its info string, its body and the (1-based) line of its first body line."""

    info: str
    body: str
    line: int


@dataclass(frozen=True)
class Command:
    """A ``$`` line of a ``console`` block and the non-blank output lines shown under it."""

    line: str
    expected: tuple[str, ...]


def fenced_blocks(doc: Path) -> list[Block]:
    """Every fenced block (```` ``` ```` fences, not nested) of a Markdown file. Raises
    ``AssertionError`` on an unclosed fence."""
    blocks: list[Block] = []
    lines = doc.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            info, start, body = lines[i][3:].strip(), i + 2, []
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise AssertionError(f"{doc}:{start - 1}: unclosed code fence")
            blocks.append(Block(info, "\n".join(body) + "\n", start))
        i += 1
    return blocks


def file_blocks(doc: Path, blocks: list[Block]) -> dict[str, str]:
    """``{relative path: content}`` of the blocks marked ``lang title="path"``. Raises
    ``AssertionError`` for a path given twice or one leaving the directory."""
    files: dict[str, str] = {}
    for b in blocks:
        m = _TITLE.match(b.info)
        if m:
            path = m.group("path")
            assert path not in files, f"{doc}:{b.line}: {path} appears twice"
            assert not Path(path).is_absolute() and ".." not in Path(path).parts, f"{doc}:{b.line}: {path}"
            files[path] = b.body
    return files


def console_commands(doc: Path, blocks: list[Block]) -> list[Command]:
    """The ``$`` commands of the blocks whose info string is exactly ``console``, in order, each with
    the output lines shown under it."""
    commands: list[Command] = []
    for b in blocks:
        if b.info != "console":
            continue
        current: list[str] | None = None
        line = ""
        for raw in b.body.splitlines():
            if raw.startswith("$ "):
                if current is not None:
                    commands.append(Command(line, tuple(current)))
                line, current = raw[2:].strip(), []
            elif current is not None:
                if raw.strip():
                    current.append(raw)
            else:
                raise AssertionError(f"{doc}:{b.line}: console output before any '$' command")
        if current is not None:
            commands.append(Command(line, tuple(current)))
    return commands


_DURATION = re.compile(r"\bin \d+(\.\d+)?s\b")
_INSTALLED = re.compile(r" \((installed|no) \w+s?[: ][^()]*\)$")


def normalize(line: str) -> str:
    """A line with runs of whitespace squashed, pytest's ``in 1.23s`` durations blanked and the
    trailing ``(installed tools: ...)`` list of an unknown-component message dropped (it depends on
    what is installed)."""
    squashed = " ".join(line.split())
    return _INSTALLED.sub("", _DURATION.sub("in Ns", squashed))


def missing_lines(expected: tuple[str, ...] | list[str], output: str) -> list[str]:
    """The ``expected`` lines that are not lines of ``output`` (compared after :func:`normalize`)."""
    actual = {normalize(line) for line in output.splitlines()}
    return [line for line in expected if normalize(line) not in actual]
