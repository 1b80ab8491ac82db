"""One closing method for every component: ``async def aclose()``. seamkit never calls ``close()``,
so a component or run resource that has only ``close()`` is reported to its author (the port check,
the checkpointer, the run's resources) rather than silently left open."""

from __future__ import annotations

import types
from typing import Any

import pytest
from seamkit._durability.checkpointer import Checkpointer
from seamkit._plugins.ports_check import Port, class_problems, port_problems, slot_port
from seamkit._ports import CheckpointPort, StorePort
from seamkit._runtime.resources import RunResources
from seamkit.testing._memory_store import MemoryStore


async def _stub(self: Any, *args: Any, **kwargs: Any) -> Any:
    return None


def _old_store_class() -> type:
    """A store written against the old name: every method of the store and checkpoint ports, but
    ``close()`` where seamkit calls ``aclose()``."""
    names = {n for port in (StorePort, CheckpointPort) for n, v in vars(port).items()
             if callable(v) and not n.startswith("_")}
    assert "aclose" in names
    body: dict[str, Any] = {n: _stub for n in names - {"aclose"}}
    body["close"] = _stub
    return type("OldStore", (), body)


OldStore = _old_store_class()


class ClosesNothing:
    pass


class OldConnection:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def test_every_store_port_and_the_reference_store_close_with_aclose() -> None:
    assert port_problems(MemoryStore(), StorePort) == []
    assert port_problems(MemoryStore(), CheckpointPort) == []
    assert not hasattr(MemoryStore, "close")


@pytest.mark.parametrize("port", [StorePort, CheckpointPort])
def test_the_port_check_tells_a_component_with_only_close_to_rename_it(port: type) -> None:
    class Legacy:
        async def close(self) -> None:
            pass

    built = [p for p in port_problems(Legacy(), port) if "aclose" in p]
    before = [p for p in class_problems(Legacy, port) if "aclose" in p]
    for problems in (built, before):
        assert len(problems) == 1
        assert "it has close()" in problems[0] and "rename close to aclose" in problems[0]


def test_a_component_without_either_method_is_told_only_that_aclose_is_missing() -> None:
    problems = port_problems(ClosesNothing(), Port("the checkpoint port (CheckpointPort)", CheckpointPort))
    assert "missing aclose()" in problems
    assert not any("close()," in p for p in problems)
    not_callable = port_problems(types.SimpleNamespace(close=None), CheckpointPort)
    assert "missing aclose()" in not_callable  # a close that cannot be called is no close() to rename


def test_a_store_slot_with_only_close_is_refused_by_the_composition_check() -> None:
    port = slot_port("store", "checkpoints")
    assert port is not None
    assert any("it has close()" in p for p in class_problems(OldStore, port))


def test_the_checkpointer_refuses_a_port_with_only_close_and_says_why() -> None:
    with pytest.raises(TypeError, match=r"OldStore: .*missing aclose\(\): it has close\(\)"):
        Checkpointer(OldStore())


async def test_a_run_resource_with_only_close_is_refused_when_opened() -> None:
    resources = RunResources()
    opened: list[Any] = []

    async def open_old() -> Any:
        conn = OldConnection()
        opened.append(conn)
        return conn

    only_close = r"'db' \(OldConnection\) has no aclose\(\), only close\(\).*rename close to aclose"
    with pytest.raises(TypeError, match=only_close):
        await resources.get("db", open_old)
    assert resources.keys == ()  # not kept: nothing would close it

    async def open_bare() -> Any:
        return ClosesNothing()

    with pytest.raises(TypeError, match=r"'x' \(ClosesNothing\) has no aclose\(\): a run closes"):
        await resources.get("x", open_bare)
    await resources.aclose()
