"""seamkit-vector-sqlite as a plugin: the registry entry, config validation, the factory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from seamkit._plugins.registry import load_registry
from seamkit._ports import VectorPort
from seamkit.values import Scope
from seamkit_vector_sqlite.config import VectorSqliteConfig
from seamkit_vector_sqlite.store import SqliteVectorStore, build

DIST = "seamkit-vector-sqlite"


def test_registered_as_memory_component() -> None:
    registry = load_registry()
    assert "sqlite_vec" in registry.names("memory")
    spec = registry.resolve("memory", "sqlite_vec", distribution=DIST)
    assert spec.config_model() is VectorSqliteConfig
    report = next(r for r in registry.reports if r.distribution == DIST)
    assert report.status == "ok", report.error


async def test_registry_builds_a_working_store() -> None:
    spec = load_registry().resolve("memory", "sqlite_vec", distribution=DIST)
    store = spec.build({"dimensions": 2, "path": ":memory:", "metric": "l2"})
    assert isinstance(store, SqliteVectorStore) and isinstance(store, VectorPort)
    assert (store.dimensions, store.metric) == (2, "l2")
    await store.upsert(Scope("t"), [("a", [1.0, 2.0], {"k": "v"})])
    assert await store.query(Scope("t"), [1.0, 2.0], k=1) == [("a", 0.0, {"k": "v"})]
    await store.aclose()


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({}, "dimensions"),
        ({"dimensions": 0}, "greater than or equal to 1"),
        ({"dimensions": 10_000}, "less than or equal to 8192"),
        ({"dimensions": 3, "metric": "dot"}, "'cosine' or 'l2'"),
        ({"dimensions": 3, "path": ""}, "at least 1 character"),
        ({"dimensions": 3, "path": "a\x00b"}, "NUL"),
        ({"dimensions": 3, "busy_timeout_s": float("inf")}, "less than or equal to 3600"),
        ({"dimensions": 3, "busy_timeout_s": float("nan")}, "busy_timeout_s"),
        ({"dimensions": 3, "busy_timeout_s": -1}, "greater than or equal to 0"),
        ({"dimensions": 3, "table": "x"}, "Extra inputs are not permitted"),
    ],
)
def test_config_refuses_bad_params(params: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        VectorSqliteConfig.model_validate(params)


def test_config_defaults_and_field_descriptions() -> None:
    config = VectorSqliteConfig(dimensions=384)
    assert (config.metric, config.path, config.busy_timeout_s) == ("cosine", ".seamkit/vectors.db", 5.0)
    assert all(field.description for field in VectorSqliteConfig.model_fields.values())


def test_build_resolves_a_relative_path_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = build(VectorSqliteConfig(dimensions=3, path="sub/v.db"))
    assert store.path == tmp_path / "sub" / "v.db"
    assert not (tmp_path / "sub").exists()  # nothing connects before first use
    home = build(VectorSqliteConfig(dimensions=3, path="~/v.db"))
    assert home.path == Path("~/v.db").expanduser()
    assert build(VectorSqliteConfig(dimensions=3, path=":memory:")).path == ":memory:"


def test_plugin_module_is_cheap_to_import() -> None:
    code = (
        "import sys, seamkit_vector_sqlite.plugin, seamkit_vector_sqlite.config;"
        "heavy = [m for m in ('sqlean', 'sqlite_vec', 'seamkit_vector_sqlite.store') if m in sys.modules];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
