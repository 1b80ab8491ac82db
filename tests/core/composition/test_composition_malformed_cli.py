"""Every file of the malformed corpus through the CLI: ``seamkit validate`` and ``seamkit run``
exit 2, print each expected ``file:line:column: key.path`` location, and never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from composition_plugins import make_registry
from seamkit._cli.main import main
from seamkit._plugins import registry as registry_module
from test_composition_malformed import ENV, FILES, expectations


@pytest.fixture
def corpus_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    previous = registry_module._REGISTRY
    registry_module.reset_registry(make_registry())
    yield
    registry_module.reset_registry(previous)


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_corpus_file_exits_2_with_locations(
    path: Path, command: str, corpus_registry: None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, str(path)] + (["a task"] if command == "run" else [])
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    for line, column, key, _ in expectations(path):
        where = f"{path}:{line}:{column}: " + (f"{key}: " if key else "")
        assert where in err, (where, err)
    assert ENV["SEAMKIT_TEST_KEY"] not in out + err
