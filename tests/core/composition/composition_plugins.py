"""Components registered in-test for the composition tests (no other helper's plugins needed).

A uniquely named module (not ``conftest``) so that test modules can import it safely."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, DirectoryPath, Field, SecretStr
from seamkit._hookspecs import hookimpl
from seamkit._plugins.registry import Registry
from seamkit._tools import tool
from seamkit.testing import ScriptedModel

# -- config models --------------------------------------------------------------------------------


class ReadFileConfig(BaseModel):
    """Parameters of ``use: read_file``."""

    model_config = ConfigDict(extra="forbid")
    root: DirectoryPath = Field(description="Directory the tool may read")
    max_bytes: int = Field(default=10_000, ge=1, description="Most bytes returned")


class EchoConfig(BaseModel):
    """Parameters of ``use: echo``."""

    model_config = ConfigDict(extra="forbid")
    prefix: str = Field(default="", description="Text put before the echo")
    times: int = Field(default=1, ge=1, description="Repeat count")
    version: str = Field(default="1", description="A text field (for number-like text)")
    ratio: float = Field(default=1.0, description="A float field")
    mode: str = Field(default="0644", description="A text field (octal-like)")


class TagInner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str
    weight: float = 1.0


class TagConfig(BaseModel):
    """Parameters of ``use: tag``."""

    model_config = ConfigDict(extra="forbid")
    label: str = Field(description="Label added to calls")
    inner: TagInner | None = None


class SecretiveConfig(BaseModel):
    """Parameters of ``use: secretive`` (a provider needing an API key)."""

    model_config = ConfigDict(extra="forbid")
    api_key: SecretStr = Field(description="API key")
    base_url: str = Field(default="http://127.0.0.1:1", description="Endpoint")
    answer: str = "ok"
    timeout: float = Field(default=5.0, gt=0)


class FailingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    why: str = "boom"


# -- factories -----------------------------------------------------------------------------------

BUILT: list[str] = []


def make_calculator() -> Any:
    BUILT.append("calculator")

    @tool(side_effecting=False, name="calculator")
    def calculator(expression: str) -> str:
        """Evaluate a sum such as ``2 + 3``.

        Args:
            expression: two integers joined by '+'.
        """
        a, b = expression.split("+")
        return str(int(a) + int(b))

    return calculator


def make_read_file(cfg: ReadFileConfig) -> Any:
    BUILT.append(f"read_file:{cfg.root}")
    root = Path(cfg.root)

    @tool(side_effecting=False, name="read_file")
    def read_file(name: str) -> str:
        """Read a file under the root.

        Args:
            name: file name.
        """
        return (root / name).read_text()[: cfg.max_bytes]

    return read_file


def make_echo(cfg: EchoConfig) -> Any:
    BUILT.append("echo")

    @tool(side_effecting=False, name="echo")
    def echo(text: str) -> str:
        """Echo text.

        Args:
            text: what to echo.
        """
        return cfg.prefix + text * cfg.times

    return echo


def make_search_a() -> Any:
    @tool(side_effecting=False, name="search")
    def search(q: str) -> str:
        """Search (a)."""
        return "a:" + q

    return search


def make_search_b() -> Any:
    @tool(side_effecting=False, name="search")
    def search(q: str) -> str:
        """Search (b)."""
        return "b:" + q

    return search


TAGGED: list[str] = []


def make_tag(cfg: TagConfig) -> Any:
    async def tag_mw(call: Any, nxt: Any) -> Any:
        TAGGED.append(f"{cfg.label}:{call.kind}")
        async for item in nxt(call):
            yield item

    return tag_mw


def make_secretive(cfg: SecretiveConfig) -> Any:
    return ScriptedModel([cfg.answer])


def make_failing(cfg: FailingConfig) -> Any:
    raise RuntimeError(f"factory failed: {cfg.why}")


def heavy_factory(cfg: Any) -> Any:  # must never be called during validation
    raise AssertionError("a factory was called during validation")


# -- plugins -------------------------------------------------------------------------------------


class LocalTools:
    @hookimpl
    def seamkit_register_tools(self, register: Any) -> None:
        register("calculator", make_calculator, description="Adds two integers")
        register("read_file", make_read_file, config=ReadFileConfig, description="Reads files under a root")
        register("echo", make_echo, config=EchoConfig, description="Echoes text")
        register("broken", make_echo, config="no_such_module_for_seamkit_tests:Config",
                 description="Its config cannot be imported")

    @hookimpl
    def seamkit_register_middlewares(self, register: Any) -> None:
        register("tag", make_tag, config=TagConfig, description="Records calls")

    @hookimpl
    def seamkit_register_providers(self, register: Any) -> None:
        register("secretive", make_secretive, config=SecretiveConfig, description="Needs an API key")
        register("failing", make_failing, config=FailingConfig, description="Factory raises")
        register("heavy", heavy_factory, config=EchoConfig, description="Factory must not run")


class SearchA:
    @hookimpl
    def seamkit_register_tools(self, register: Any) -> None:
        register("search", make_search_a, description="Search from dist a")


class SearchB:
    @hookimpl
    def seamkit_register_tools(self, register: Any) -> None:
        register("search", make_search_b, description="Search from dist b")


def make_registry() -> Registry:
    import seamkit.testing._components as testkit

    reg = Registry(strict=True)
    reg.register_plugin(testkit, "testkit", distribution="seamkit", version="0.1.0")
    reg.register_plugin(LocalTools(), "local", distribution="seamkit-local-tools", version="1.0")
    reg.register_plugin(SearchA(), "search-a", distribution="seamkit-search-a", version="1.0")
    reg.register_plugin(SearchB(), "search-b", distribution="seamkit-search-b", version="2.0")
    return reg
