"""The ``read_file`` and ``write_file`` tools, confined to a root directory.

Confinement, in order, for every call:

1. the path must be relative, non-empty and free of NUL bytes;
2. joined to the root and normalised lexically, it must stay under the root (no ``..`` escape);
3. resolved with :func:`os.path.realpath` (every symlink followed, the final one included) it must
   *still* be under the root's real path, so a symlink (file or directory) pointing outside is
   refused, for reads and for writes;
4. the resolved path is then opened component by component from a descriptor of the root
   (``openat`` with ``O_NOFOLLOW``), so a directory or file swapped for a symlink between the check
   and the open makes the call fail instead of escaping.

Writes additionally refuse files that are not regular files and regular files with more than one
hard link (which may be shared with a file outside the root). Text is UTF-8 both ways.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from typing import Annotated, Literal

from pydantic import Field
from seamkit.errors import ConfigError, ConfigIssue
from seamkit.plugin import FunctionTool, tool

from seamkit_tools_basic.config import ReadFileConfig, WriteFileConfig
from seamkit_tools_basic.errors import FileToolError, PathOutsideRoot

__all__ = ["RootedDirectory", "build_read_file", "build_write_file"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # never block on a FIFO; no effect on regular files
_O_BINARY = getattr(os, "O_BINARY", 0)
_HAVE_DIR_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _absolute_root(root: str) -> str:
    """``root`` with ``~`` expanded, made absolute against the current working directory."""
    return os.path.abspath(os.path.expanduser(root))


class RootedDirectory:
    """File access confined to one directory.

    ``root``: the directory (absolute, or relative to the working directory at construction).
    ``create``: create the root (and, on writes, missing parent directories) when absent;
    otherwise a missing root raises :class:`~seamkit.errors.ConfigError` at construction.
    """

    def __init__(self, root: str, *, create: bool = False) -> None:
        self._root_abs = _absolute_root(root)
        self._create = create
        self._real_root: str | None = None
        if os.path.isdir(self._root_abs):
            self._real_root = os.path.realpath(self._root_abs)
        elif os.path.exists(self._root_abs) or not create:
            what = "is not a directory" if os.path.exists(self._root_abs) else "does not exist"
            raise ConfigError([ConfigIssue(f"root directory {self._root_abs!r} {what}", "root")])

    @property
    def root(self) -> str:
        """The root's absolute path (its real path once it exists)."""
        return self._real_root or self._root_abs

    def _ensure_root(self) -> str:
        if self._real_root is None:
            if not self._create:
                raise FileToolError("the root directory does not exist")
            try:
                os.makedirs(self._root_abs, exist_ok=True)
            except OSError as exc:
                raise FileToolError(f"cannot create the root directory: {exc.strerror}") from None
            self._real_root = os.path.realpath(self._root_abs)
        return self._real_root

    # -- path checks ---------------------------------------------------------------------------

    def resolve(self, path: str) -> list[str]:
        """The components of ``path``'s real location relative to the real root (empty for the
        root itself). Raises :class:`PathOutsideRoot` for an absolute path, a ``..`` escape or a
        symlink leading outside; :class:`FileToolError` for an empty path or a NUL byte."""
        real_root = self._ensure_root()
        if not isinstance(path, str) or not path.strip():
            raise FileToolError("the path is empty; give a path relative to the root directory")
        if "\x00" in path:
            raise FileToolError("the path contains a NUL byte")
        if os.path.isabs(path) or os.path.splitdrive(path)[0]:
            raise PathOutsideRoot(f"absolute paths are not allowed ({path!r}); give a path relative to the root")
        joined = os.path.normpath(os.path.join(real_root, path))
        if not _within(joined, real_root):
            raise PathOutsideRoot(f"path {path!r} escapes the root directory")
        real = os.path.realpath(joined)
        if not _within(real, real_root):
            raise PathOutsideRoot(f"path {path!r} leads outside the root directory through a symbolic link")
        rel = os.path.relpath(real, real_root)
        return [] if rel == "." else rel.split(os.sep)

    # -- descriptor walk -------------------------------------------------------------------------

    def _open_parent(self, parts: list[str], *, create: bool, shown: str) -> int:
        """A descriptor of the directory ``parts`` under the root, opened one component at a time
        without following symlinks; missing directories are made when ``create``."""
        dflags = os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC
        fd = os.open(self._ensure_root(), dflags)
        try:
            for part in parts:
                try:
                    nfd = os.open(part, dflags | _O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise FileToolError(f"the parent directory of {shown!r} does not exist") from None
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                    nfd = os.open(part, dflags | _O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    # O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR or ELOOP: say which.
                    if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                        raise PathOutsideRoot(
                            f"refused {shown!r}: a directory on the path was replaced by a symbolic link "
                            "while it was being opened"
                        ) from None
                    raise
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open(self, path: str, flags: int, *, create_dirs: bool, verb: str) -> int:
        parts = self.resolve(path)
        if not parts:
            raise FileToolError(f"{path!r} is the root directory, not a file")
        flags |= _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY
        try:
            if not _HAVE_DIR_FD:  # pragma: no cover - platforms without openat (Windows)
                target = os.path.join(self._ensure_root(), *parts)
                if create_dirs:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                return os.open(target, flags, 0o666)
            dfd = self._open_parent(parts[:-1], create=create_dirs, shown=path)
            try:
                return os.open(parts[-1], flags, 0o666, dir_fd=dfd)
            finally:
                os.close(dfd)
        except FileToolError:
            raise
        except FileNotFoundError:
            raise FileToolError(f"no such file: {path!r}") from None
        except IsADirectoryError:
            raise FileToolError(f"{path!r} is a directory, not a file") from None
        except NotADirectoryError:
            raise FileToolError(f"a component of {path!r} is not a directory") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise PathOutsideRoot(
                    f"refused {path!r}: a symbolic link is in the way (a link loop, or the path changed "
                    "while it was being opened)"
                ) from None
            if exc.errno == errno.ENXIO:
                raise FileToolError(f"{path!r} is not a regular file") from None
            raise FileToolError(f"cannot {verb} {path!r}: {exc.strerror}") from None

    # -- operations ------------------------------------------------------------------------------

    def read_text(self, path: str, max_bytes: int) -> tuple[str, int, bool]:
        """Read ``path`` as UTF-8: ``(text, size in bytes, truncated)``; at most ``max_bytes``
        bytes are read (a character cut by the limit is dropped). Raises :class:`FileToolError`
        for a missing, non-regular, binary or non-UTF-8 file, :class:`PathOutsideRoot` for a path
        outside the root."""
        fd = self._open(path, os.O_RDONLY, create_dirs=False, verb="read")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
                raise FileToolError(f"{path!r} is {kind}")
            chunks: list[bytes] = []
            want = max_bytes + 1
            while want > 0:
                chunk = os.read(fd, min(want, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                want -= len(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        truncated = len(data) > max_bytes
        data = data[:max_bytes]
        if b"\x00" in data:
            raise FileToolError(f"{path!r} looks like a binary file (it contains NUL bytes); only text can be read")
        decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        try:
            text = decoder.decode(data, final=not truncated)
        except UnicodeDecodeError as exc:
            raise FileToolError(
                f"{path!r} is not UTF-8 text (undecodable byte at offset {exc.start}); binary files cannot be read"
            ) from None
        return text, max(st.st_size, len(data)), truncated

    def write_text(self, path: str, content: str, *, append: bool, create_dirs: bool) -> int:
        """Write (or append) ``content`` as UTF-8 to ``path``; returns the bytes written. Raises
        :class:`FileToolError` or :class:`PathOutsideRoot`."""
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise FileToolError("the content is not valid Unicode text (lone surrogate)") from None
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
        fd = self._open(path, flags, create_dirs=create_dirs, verb="write")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FileToolError(f"{path!r} is not a regular file")
            if st.st_nlink > 1:
                raise FileToolError(
                    f"refused {path!r}: it has {st.st_nlink} hard links and may be shared with a file outside the root"
                )
            if not append:
                os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except OSError as exc:
            raise FileToolError(f"cannot write {path!r}: {exc.strerror}") from None
        finally:
            os.close(fd)
        return len(data)


def build_read_file(config: ReadFileConfig) -> FunctionTool:
    """The ``read_file`` tool (not side-effecting). Raises :class:`~seamkit.errors.ConfigError`
    when ``config.root`` is not an existing directory."""
    jail = RootedDirectory(str(config.root), create=False)
    limit = config.max_bytes

    @tool(side_effecting=False, name="read_file")
    def read_file(path: str, max_bytes: Annotated[int, Field(ge=1)] | None = None) -> str:
        """Read a UTF-8 text file under the tool's root directory and return its text.

        When the file is longer than max_bytes, the text ends with a line starting "[truncated:".

        Args:
            path: File path relative to the root directory, e.g. "notes/todo.txt". Absolute paths,
                ".." escapes and symbolic links leading outside the root are refused.
            max_bytes: Most bytes to read (default and maximum: the tool's configured limit).
        """
        n = limit if max_bytes is None else min(max_bytes, limit)
        text, size, truncated = jail.read_text(path, n)
        if truncated:
            text += f"\n[truncated: showed the first {n} of {size} bytes; pass a larger max_bytes (at most {limit})]"
        return text

    return read_file


def build_write_file(config: WriteFileConfig) -> FunctionTool:
    """The ``write_file`` tool (side-effecting). Raises :class:`~seamkit.errors.ConfigError` when
    ``config.root`` is missing and ``create_dirs`` is false, or is not a directory."""
    jail = RootedDirectory(str(config.root), create=config.create_dirs)
    create_dirs = config.create_dirs
    limit = config.max_bytes
    dirs_note = "Missing parent directories are created." if create_dirs else "The parent directory must exist."

    description = (
        "Write UTF-8 text to a file under the tool's root directory; returns the number of bytes written. "
        f"{dirs_note} At most {limit} bytes per call."
    )

    @tool(side_effecting=True, name="write_file", description=description)
    def write_file(path: str, content: str, mode: Literal["overwrite", "append"] = "overwrite") -> int:
        """Write UTF-8 text to a file under the tool's root directory; returns the number of bytes written.

        Args:
            path: File path relative to the root directory, e.g. "out/report.md". Absolute paths,
                ".." escapes and symbolic links leading outside the root are refused.
            content: The text to write.
            mode: "overwrite" replaces the file's content (the default); "append" adds to its end.
        """
        size = len(content.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise FileToolError(f"content too large ({size} bytes; the limit is {limit})")
        return jail.write_text(path, content, append=(mode == "append"), create_dirs=create_dirs)

    return write_file
