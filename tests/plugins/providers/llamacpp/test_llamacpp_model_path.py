"""``model_path`` is checked when the configuration is validated (no model is loaded here).

A missing file, a directory, an empty file or a file without the ``GGUF`` magic is a config error
located at ``agent.model.model_path``; a relative path is resolved against the YAML file's
directory; a file that changes after validation is still a ``ProviderError`` at run time.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pydantic
import pytest
from seamkit._cli.main import main as cli_main
from seamkit.composition import build_agent, load_composition
from seamkit.errors import ConfigError, FailureClass, ProviderError
from seamkit.values import ChatRequest, Message
from seamkit_llamacpp.config import LlamaCppConfig, gguf_problem
from seamkit_llamacpp.provider import LlamaCppProvider, resolve_model_path

# A GGUF header start: magic, version 3, zero tensors, zero metadata entries. Enough for the
# config check (which reads only the magic); llama.cpp is never asked to load it here.
TINY_GGUF = b"GGUF" + (3).to_bytes(4, "little") + bytes(16)


def gguf(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(TINY_GGUF)
    return path


def message_of(exc: pydantic.ValidationError) -> str:
    (err,) = exc.errors(include_url=False)
    return str(err["msg"])


def test_an_existing_gguf_file_is_accepted_as_a_path(tmp_path: Path) -> None:
    f = gguf(tmp_path / "m.gguf")
    cfg = LlamaCppConfig(model_path=str(f))
    assert cfg.model_path == f
    assert LlamaCppProvider(cfg).model == "m.gguf"
    assert LlamaCppConfig().model_path is None


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "absent.gguf", "model file not found: {p}"),
        (lambda d: d, "{p} is a directory, not a GGUF file"),
        (lambda d: (d / "empty.gguf", (d / "empty.gguf").write_bytes(b""))[0], "{p} is empty, not a GGUF file"),
        (
            lambda d: (d / "x.bin", (d / "x.bin").write_bytes(b"PK\x03\x04 a zip"))[0],
            "{p} is not a GGUF file (it does not start with the magic bytes 'GGUF')",
        ),
    ],
    ids=["missing", "directory", "empty", "not-gguf"],
)
def test_a_path_that_is_not_a_gguf_file_fails_validation_with_a_clear_reason(
    tmp_path: Path, make: object, expected: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(pydantic.ValidationError) as info:
        LlamaCppConfig(model_path=str(path))
    assert message_of(info.value) == "Value error, " + expected.format(p=path)
    assert gguf_problem(path) == expected.format(p=path)


def test_home_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    f = gguf(tmp_path / "models" / "m.gguf")
    assert LlamaCppConfig(model_path="~/models/m.gguf").model_path == f


def write_yaml(path: Path, model_path: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        textwrap.dedent(
            f"""\
            seamkit: 1
            agent:
              model:
                use: llamacpp
                model_path: {model_path}
              prompt: hi
            """
        ),
        encoding="utf-8",
    )
    return path


def test_a_relative_model_path_is_relative_to_the_yaml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = gguf(tmp_path / "conf" / "models" / "m.gguf")
    yaml_file = write_yaml(tmp_path / "conf" / "agent.yaml", "models/m.gguf")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the working directory must not matter
    composition = load_composition(yaml_file)
    assert Path(composition.agent.model.config.model_path).resolve() == f.resolve()
    provider = build_agent(composition).model
    assert isinstance(provider, LlamaCppProvider) and provider.model == "m.gguf"


def test_a_home_relative_model_path_in_a_composition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    f = gguf(home / "models" / "m.gguf")
    monkeypatch.setenv("HOME", str(home))
    composition = load_composition(write_yaml(tmp_path / "conf" / "agent.yaml", "~/models/m.gguf"))
    assert composition.agent.model.config.model_path == f


@pytest.mark.parametrize(
    ("name", "setup", "reason"),
    [
        ("absent.gguf", None, "model file not found"),
        ("models", "dir", "is a directory, not a GGUF file"),
        ("empty.gguf", b"", "is empty, not a GGUF file"),
        ("notes.txt", b"hello", "is not a GGUF file"),
    ],
)
def test_validate_reports_a_bad_model_path_as_a_located_config_error(
    tmp_path: Path, name: str, setup: bytes | str | None, reason: str
) -> None:
    target = tmp_path / name
    if setup == "dir":
        target.mkdir()
    elif isinstance(setup, bytes):
        target.write_bytes(setup)
    yaml_file = write_yaml(tmp_path / "agent.yaml", name)
    with pytest.raises(ConfigError) as info:
        load_composition(yaml_file)
    (issue,) = info.value.issues
    assert issue.path == "agent.model.model_path"
    assert (issue.file, issue.line) == (str(yaml_file), 5)
    assert reason in issue.message and str(target) in issue.message


def test_seamkit_validate_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "models").mkdir()
    yaml_file = write_yaml(tmp_path / "agent.yaml", "models")
    assert cli_main(["validate", str(yaml_file)]) == 2
    err = capsys.readouterr().err
    assert f"{yaml_file}:5:" in err and "agent.model.model_path" in err
    assert "is a directory, not a GGUF file" in err and "Traceback" not in err


async def test_a_model_file_removed_after_validation_is_a_provider_error(tmp_path: Path) -> None:
    f = gguf(tmp_path / "m.gguf")
    provider = LlamaCppProvider(LlamaCppConfig(model_path=str(f)))
    os.remove(f)
    with pytest.raises(ProviderError) as info:
        await provider.chat(ChatRequest((Message.user("hi"),)))
    assert info.value.failure_class is FailureClass.INVALID_REQUEST
    assert str(info.value).endswith(f"model file not found: {f}")


def test_a_model_file_replaced_after_validation_is_a_provider_error(tmp_path: Path) -> None:
    f = gguf(tmp_path / "m.gguf")
    LlamaCppConfig(model_path=str(f))
    f.write_bytes(b"<html>not a model</html>")
    with pytest.raises(ProviderError, match="is not a GGUF file") as info:
        resolve_model_path(f)
    assert info.value.failure_class is FailureClass.INVALID_REQUEST
