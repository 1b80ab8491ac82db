"""``read_file`` / ``write_file``: behaviour through the ToolPort, and confinement to the root."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pydantic
import pytest
from seamkit.errors import ConfigError, ToolArgumentError, ToolError
from seamkit.testing import make_test_ctx
from seamkit_tools_basic.config import ReadFileConfig, WriteFileConfig
from seamkit_tools_basic.errors import FileToolError, PathOutsideRoot
from seamkit_tools_basic.files import RootedDirectory, build_read_file, build_write_file

SECRET = "top secret outside the root\n"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (root / "hello.txt").write_text("héllo wörld\n", encoding="utf-8")
    (root / "docs" / "a.md").write_text("# A\n")
    return {"root": root, "outside": outside, "tmp": tmp_path}


async def call(tool: Any, **arguments: Any) -> Any:
    return await tool.invoke(tool.validate(arguments), make_test_ctx())


def reader(root: Path, **cfg: Any) -> Any:
    return build_read_file(ReadFileConfig(root=str(root), **cfg))


def writer(root: Path, **cfg: Any) -> Any:
    return build_write_file(WriteFileConfig(root=str(root), **cfg))


# -- schemas ----------------------------------------------------------------------------------------


def test_schemas(layout: dict[str, Path]) -> None:
    r, w = reader(layout["root"]), writer(layout["root"])
    assert (r.schema.name, r.schema.side_effecting) == ("read_file", False)
    assert (w.schema.name, w.schema.side_effecting) == ("write_file", True)
    rp, wp = r.schema.parameters["properties"], w.schema.parameters["properties"]
    assert set(rp) == {"path", "max_bytes"} and r.schema.parameters["required"] == ["path"]
    assert set(wp) == {"path", "content", "mode"} and w.schema.parameters["required"] == ["path", "content"]
    assert wp["mode"]["enum"] == ["overwrite", "append"] and wp["mode"]["default"] == "overwrite"
    for props in (rp, wp):
        for name, prop in props.items():
            assert prop.get("description"), f"parameter {name} is undocumented"
    with pytest.raises(ToolArgumentError):
        w.validate({"path": "x", "content": "y", "mode": "truncate"})
    with pytest.raises(ToolArgumentError):
        r.validate({"path": "x", "max_bytes": 0})


# -- reading ----------------------------------------------------------------------------------------


async def test_read_text_files(layout: dict[str, Path]) -> None:
    r = reader(layout["root"])
    assert await call(r, path="hello.txt") == "héllo wörld\n"
    assert await call(r, path="docs/a.md") == "# A\n"
    assert await call(r, path="./docs/../docs/a.md") == "# A\n"  # `..` that stays inside is fine


async def test_read_strips_a_utf8_bom(layout: dict[str, Path]) -> None:
    (layout["root"] / "bom.txt").write_bytes(b"\xef\xbb\xbfhi")
    assert await call(reader(layout["root"]), path="bom.txt") == "hi"


async def test_read_truncates_at_max_bytes_without_splitting_characters(layout: dict[str, Path]) -> None:
    (layout["root"] / "big.txt").write_text("é" * 10, encoding="utf-8")  # 20 bytes
    r = reader(layout["root"], max_bytes=100)
    out = await call(r, path="big.txt", max_bytes=5)
    text, marker = out.split("\n", 1)
    assert text == "éé"  # 5 bytes: two characters; the cut third one is dropped
    assert marker.startswith("[truncated: showed the first 5 of 20 bytes")
    assert await call(r, path="big.txt", max_bytes=20) == "é" * 10
    # the configured limit caps the argument
    capped = reader(layout["root"], max_bytes=4)
    assert (await call(capped, path="big.txt", max_bytes=1000)).startswith("éé\n[truncated: showed the first 4 of 20")


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary"), (b"caf\xe9", "not UTF-8 text")],
)
async def test_read_refuses_binary_and_undecodable(layout: dict[str, Path], data: bytes, message: str) -> None:
    (layout["root"] / "blob").write_bytes(data)
    with pytest.raises(FileToolError, match=message):
        await call(reader(layout["root"]), path="blob")


@pytest.mark.parametrize(
    ("path", "message"),
    [("missing.txt", "no such file"), ("docs", "is a directory"), ("hello.txt/x", "not a directory"),
     ("nope/x.txt", "does not exist"), (".", "root directory"), ("", "empty"), ("   ", "empty")],
)
async def test_read_errors(layout: dict[str, Path], path: str, message: str) -> None:
    with pytest.raises(FileToolError, match=message):
        await call(reader(layout["root"]), path=path)


async def test_read_of_a_fifo_fails_instead_of_blocking(layout: dict[str, Path]) -> None:
    os.mkfifo(layout["root"] / "pipe")
    start = time.perf_counter()
    with pytest.raises(FileToolError, match="not a regular file"):
        await call(reader(layout["root"]), path="pipe")
    assert time.perf_counter() - start < 2


def test_read_root_must_exist(layout: dict[str, Path]) -> None:
    # refused by the config model itself, so `seamkit validate` reports it before any run
    with pytest.raises(pydantic.ValidationError, match="does not exist"):
        reader(layout["tmp"] / "absent")
    with pytest.raises(pydantic.ValidationError, match="not a directory"):
        reader(layout["root"] / "hello.txt")


async def test_relative_root_resolves_against_cwd_at_build(layout: dict[str, Path],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(layout["tmp"])
    r = reader(Path("root"))
    monkeypatch.chdir(layout["outside"])
    assert await call(r, path="hello.txt") == "héllo wörld\n"


# -- escapes ----------------------------------------------------------------------------------------


def _escape_paths(layout: dict[str, Path]) -> list[str]:
    return [
        str(layout["outside"] / "secret.txt"),  # absolute
        "/etc/passwd",
        "../outside/secret.txt",
        "docs/../../outside/secret.txt",
        "docs/../../../" + str(layout["outside"] / "secret.txt").lstrip("/"),
        "..",
    ]


async def test_read_refuses_paths_outside_root(layout: dict[str, Path]) -> None:
    r = reader(layout["root"])
    for path in _escape_paths(layout):
        with pytest.raises(PathOutsideRoot) as info:
            await call(r, path=path)
        assert SECRET.strip() not in str(info.value)


async def test_read_refuses_symlinks_leading_outside(layout: dict[str, Path]) -> None:
    root, outside = layout["root"], layout["outside"]
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "rel-link.txt").symlink_to(Path("..") / "outside" / "secret.txt")
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    (root / "docs" / "up").symlink_to(Path("..") / "..", target_is_directory=True)
    r = reader(root)
    for path in ["link.txt", "rel-link.txt", "outdir/secret.txt", "docs/up/outside/secret.txt"]:
        with pytest.raises(PathOutsideRoot, match="symbolic link"):
            await call(r, path=path)


async def test_symlinks_inside_root_are_followed(layout: dict[str, Path]) -> None:
    root = layout["root"]
    (root / "alias.txt").symlink_to(root / "hello.txt")
    (root / "d").symlink_to(root / "docs", target_is_directory=True)
    r = reader(root)
    assert await call(r, path="alias.txt") == "héllo wörld\n"
    assert await call(r, path="d/a.md") == "# A\n"


async def test_root_that_is_itself_a_symlink_works(layout: dict[str, Path]) -> None:
    alias = layout["tmp"] / "root-alias"
    alias.symlink_to(layout["root"], target_is_directory=True)
    r = reader(alias)
    assert await call(r, path="hello.txt") == "héllo wörld\n"
    with pytest.raises(PathOutsideRoot):
        await call(r, path="../outside/secret.txt")


@pytest.mark.parametrize("path", ["hello.txt\x00.png", "\x00", "docs/\x00/../a.md"])
async def test_nul_byte_paths_are_refused(layout: dict[str, Path], path: str) -> None:
    with pytest.raises(FileToolError, match="NUL byte"):
        await call(reader(layout["root"]), path=path)
    with pytest.raises(FileToolError, match="NUL byte"):
        await call(writer(layout["root"]), path=path, content="x")


def test_a_directory_swapped_for_a_symlink_after_the_check_is_refused(layout: dict[str, Path]) -> None:
    """The race: ``sub`` is checked while it is a real directory, then replaced by a symlink to the
    outside before the file is opened. The component-by-component O_NOFOLLOW open refuses it."""
    root, outside = layout["root"], layout["outside"]
    (root / "sub").mkdir()
    (root / "sub" / "secret.txt").write_text("inside")
    jail = RootedDirectory(str(root))
    parts = jail.resolve("sub/secret.txt")
    assert parts == ["sub", "secret.txt"]
    (root / "sub" / "secret.txt").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside, target_is_directory=True)
    jail.resolve = lambda path: parts  # type: ignore[method-assign]  # the check already happened
    with pytest.raises(PathOutsideRoot, match="symbolic link"):
        jail.read_text("sub/secret.txt", 1000)
    with pytest.raises(PathOutsideRoot, match="symbolic link"):
        jail.write_text("sub/secret.txt", "pwned", append=False, create_dirs=True)
    assert (outside / "secret.txt").read_text() == SECRET


# -- writing ----------------------------------------------------------------------------------------


async def test_write_overwrite_and_append(layout: dict[str, Path]) -> None:
    w = writer(layout["root"])
    assert await call(w, path="out.txt", content="héllo") == 6
    assert (layout["root"] / "out.txt").read_text(encoding="utf-8") == "héllo"
    assert await call(w, path="out.txt", content=" more", mode="append") == 5
    assert (layout["root"] / "out.txt").read_text(encoding="utf-8") == "héllo more"
    assert await call(w, path="out.txt", content="new") == 3
    assert (layout["root"] / "out.txt").read_text(encoding="utf-8") == "new"
    assert await call(w, path="empty.txt", content="") == 0
    assert (layout["root"] / "empty.txt").read_bytes() == b""


async def test_write_creates_parent_directories_only_when_configured(layout: dict[str, Path]) -> None:
    root = layout["root"]
    assert await call(writer(root), path="a/b/c.txt", content="x") == 1
    assert (root / "a" / "b" / "c.txt").read_text() == "x"
    strict = writer(root, create_dirs=False)
    with pytest.raises(FileToolError, match=r"parent directory of 'q/r\.txt' does not exist"):
        await call(strict, path="q/r.txt", content="x")
    assert not (root / "q").exists()
    assert await call(strict, path="a/b/d.txt", content="yy") == 2


async def test_write_root_is_created_when_missing_and_create_dirs(layout: dict[str, Path]) -> None:
    new_root = layout["tmp"] / "fresh" / "root"
    w = writer(new_root)
    assert not new_root.exists()  # nothing is created at build time
    assert await call(w, path="f.txt", content="ok") == 2
    assert (new_root / "f.txt").read_text() == "ok"
    with pytest.raises(ConfigError, match="does not exist"):
        writer(layout["tmp"] / "other", create_dirs=False)


async def test_write_content_limit(layout: dict[str, Path]) -> None:
    w = writer(layout["root"], max_bytes=4)
    with pytest.raises(FileToolError, match=r"content too large \(6 bytes; the limit is 4\)"):
        await call(w, path="x.txt", content="ééé")
    assert not (layout["root"] / "x.txt").exists()


@pytest.mark.parametrize(("path", "message"), [("docs", "is a directory"), (".", "root directory"),
                                                ("hello.txt/x", "not a directory")])
async def test_write_errors(layout: dict[str, Path], path: str, message: str) -> None:
    with pytest.raises(FileToolError, match=message):
        await call(writer(layout["root"]), path=path, content="x")


async def test_write_refuses_paths_outside_root(layout: dict[str, Path]) -> None:
    w = writer(layout["root"])
    for path in [*_escape_paths(layout), "../outside/new.txt", "../new-sibling/x.txt"]:
        with pytest.raises(PathOutsideRoot):
            await call(w, path=path, content="pwned")
    assert (layout["outside"] / "secret.txt").read_text() == SECRET
    assert sorted(p.name for p in layout["outside"].iterdir()) == ["secret.txt"]
    assert not (layout["tmp"] / "new-sibling").exists()


async def test_write_refuses_symlinks_leading_outside(layout: dict[str, Path]) -> None:
    root, outside = layout["root"], layout["outside"]
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dangling.txt").symlink_to(outside / "created-by-attack.txt")  # target does not exist yet
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    w = writer(root)
    for path in ["link.txt", "dangling.txt", "outdir/secret.txt", "outdir/new.txt", "outdir/sub/new.txt"]:
        for mode in ("overwrite", "append"):
            with pytest.raises(PathOutsideRoot, match="symbolic link"):
                await call(w, path=path, content="pwned", mode=mode)
    assert (outside / "secret.txt").read_text() == SECRET
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_write_through_a_symlink_inside_root_writes_its_target(layout: dict[str, Path]) -> None:
    root = layout["root"]
    (root / "alias.txt").symlink_to(root / "docs" / "a.md")
    assert await call(writer(root), path="alias.txt", content="B") == 1
    assert (root / "docs" / "a.md").read_text() == "B"
    assert (root / "alias.txt").is_symlink()


async def test_write_refuses_hard_linked_files(layout: dict[str, Path]) -> None:
    root = layout["root"]
    try:
        os.link(layout["outside"] / "secret.txt", root / "hard.txt")
    except OSError as exc:  # pragma: no cover - cross-device tmp
        pytest.fail(f"cannot create a hard link in tmp_path: {exc}")
    with pytest.raises(FileToolError, match="hard links"):
        await call(writer(root), path="hard.txt", content="pwned")
    assert (layout["outside"] / "secret.txt").read_text() == SECRET


async def test_write_to_a_fifo_fails_instead_of_blocking(layout: dict[str, Path]) -> None:
    os.mkfifo(layout["root"] / "pipe")
    with pytest.raises(FileToolError, match="not a regular file"):
        await call(writer(layout["root"]), path="pipe", content="x")


async def test_read_back_what_was_written(layout: dict[str, Path]) -> None:
    root = layout["root"]
    text = "line 1\nligne 2 — ünïcode ✓\n"
    n = await call(writer(root), path="notes/n.txt", content=text)
    assert n == len(text.encode("utf-8"))
    assert await call(reader(root), path="notes/n.txt") == text


def test_all_file_errors_are_tool_errors() -> None:
    assert issubclass(FileToolError, ToolError) and issubclass(PathOutsideRoot, FileToolError)
