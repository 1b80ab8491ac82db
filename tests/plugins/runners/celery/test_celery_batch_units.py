"""``seamkit batch``'s pieces without a broker: input parsing, batch ids, result lines, and when a
run that never started is sent again."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit_celery.batch import (
    BatchInputError,
    BatchItem,
    BatchState,
    _error_type,
    _resend_overtaken,
    batch_identity,
    default_batch_id,
    parse_inputs,
    result_line,
)


def test_parse_inputs_strings_objects_and_blank_lines(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text('"a"\n\n  \n{"task": "b", "variables": {"x": "1"}}\n{"task": "c"}\n')
    items = parse_inputs(f)
    assert [(i.index, i.line, i.task, dict(i.variables)) for i in items] == [
        (0, 1, "a", {}), (1, 4, "b", {"x": "1"}), (2, 5, "c", {})]


@pytest.mark.parametrize(("line", "why"), [
    ('{"task": "a", "variables": {"x": 1}}', "'variables' must be an object of strings"),
    ('""', "the task is empty"),
    ("3", "got int"),
    ('{"variables": {}}', "'task' must be a string, got NoneType"),
])
def test_parse_inputs_names_the_bad_line(tmp_path: Path, line: str, why: str) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text(f'"fine"\n{line}\n')
    with pytest.raises(BatchInputError) as e:
        parse_inputs(f)
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith(f"{f}:2: ") and why in str(e.value)


def test_not_utf8_input_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_bytes(b'"caf\xe9"\n')
    with pytest.raises(BatchInputError, match="not UTF-8"):
        parse_inputs(f)


def test_a_line_not_utf8_is_located_with_the_other_bad_lines(tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_bytes(b'"fine"\r\n"caf\xe9"\r\nnot json\n"ok"\n')
    with pytest.raises(BatchInputError) as e:
        parse_inputs(f)
    assert [p.split(": ")[0] for p in e.value.problems] == [f"{f}:2", f"{f}:3"]
    assert "not UTF-8 text (invalid continuation byte at byte 5 of the line)" in e.value.problems[0]


@pytest.mark.parametrize("line", [r'"bad \ud800 here"', r'{"task": "t", "variables": {"x": "\udfff"}}',
                                  r'{"task": "t", "variables": {"\ud800": "v"}}'])
def test_a_lone_surrogate_is_a_located_bad_line(tmp_path: Path, line: str) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text(f'"fine"\n{line}\n"\\ud83d\\ude00 a pair is fine"\n')
    with pytest.raises(BatchInputError) as e:
        parse_inputs(f)
    assert len(e.value.problems) == 1 and e.value.problems[0].startswith(f"{f}:2: the escape \\u"), e.value
    assert "half of a UTF-16 surrogate pair" in e.value.problems[0]


#: Any code points, lone surrogates often (``st.text()`` leaves them out, and they are a small
#: share of all code points).
_ANY_TEXT = st.one_of(st.text(st.characters(exclude_categories=())),
                      st.builds("{}{}{}".format, st.text(), st.characters(categories=["Cs"]), st.text()))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_ANY_TEXT, st.binary(), st.builds(json.dumps, _ANY_TEXT),
                          st.builds(lambda t, k, v: json.dumps({"task": t, "variables": {k: v}}),
                                    _ANY_TEXT, _ANY_TEXT, _ANY_TEXT))))
def test_any_input_lines_give_items_or_a_batch_input_error(tmp_path: Path, lines: list[str | bytes]) -> None:
    f = tmp_path / "in.jsonl"
    f.write_bytes(b"\n".join(x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass") for x in lines))
    try:
        items = parse_inputs(f)
    except BatchInputError:
        return
    batch_identity(items, tmp_path / "a.yaml")


def test_batch_id_follows_the_input_bytes_and_the_composition_path(tmp_path: Path) -> None:
    inputs, a, b = tmp_path / "in.jsonl", tmp_path / "a.yaml", tmp_path / "b.yaml"
    inputs.write_text('"x"\n')
    first = default_batch_id(inputs, a)
    assert first == default_batch_id(inputs, a) and first.startswith("b") and len(first) == 17
    assert default_batch_id(inputs, b) != first and default_batch_id(inputs, a, "other") != first
    inputs.write_text('"y"\n')
    assert default_batch_id(inputs, a) != first


def test_result_line_and_error_type() -> None:
    item = BatchItem(4, 7, "t")
    assert result_line(item, "bx", "queued", None) == {
        "index": 4, "line": 7, "run_id": "bx-4", "status": "queued", "stop_reason": None, "output": None,
        "usage": None, "cost": None, "error": None, "error_type": None}
    snap = SimpleNamespace(state={"error": "BudgetExceeded: shared ledger L has spent $1"})
    assert _error_type(snap) == "BudgetExceeded"
    assert _error_type(SimpleNamespace(state={"error": "no class here"})) is None
    assert _error_type(SimpleNamespace(state={})) is None


def test_a_run_overtaken_without_starting_is_sent_again_after_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    import seamkit_celery.batch as batch

    now = [100.0]
    monkeypatch.setattr(batch.time, "monotonic", lambda: now[0])
    items = [BatchItem(i, i + 1, "t") for i in range(4)]
    state = BatchState(items, "b", status={0: "queued", 1: "done", 2: "running", 3: "queued"})
    sent: list[int] = []
    overtaken: dict[int, float] = {}
    _resend_overtaken(state, overtaken, 10.0, sent.append)
    assert sent == []  # overtaken (2 started after it), but only just seen so
    now[0] = 109.0
    _resend_overtaken(state, overtaken, 10.0, sent.append)
    assert sent == []
    now[0] = 110.0
    _resend_overtaken(state, overtaken, 10.0, sent.append)
    assert sent == [0] and state.resent == 1  # not 3: nothing sent after it has started
    now[0] = 115.0
    _resend_overtaken(state, overtaken, 10.0, sent.append)
    assert sent == [0]  # again only after another grace
    state.status[0] = "running"
    now[0] = 130.0
    _resend_overtaken(state, overtaken, 10.0, sent.append)
    assert sent == [0] and 0 not in overtaken
    # nothing started at all: nothing is overtaken (the workers may simply be busy or absent)
    idle = BatchState(items, "c", status=dict.fromkeys(range(4), "queued"))
    _resend_overtaken(idle, {}, 0.0, sent.append)
    assert sent == [0]


def test_a_run_left_running_with_nobody_on_it_gets_a_continuation(monkeypatch: pytest.MonkeyPatch) -> None:
    import seamkit_celery.batch as batch

    now = [100.0]
    monkeypatch.setattr(batch.time, "monotonic", lambda: now[0])
    items = [BatchItem(i, i + 1, "t") for i in range(3)]
    state = BatchState(items, "b", status={0: "running", 1: "running", 2: "done"}, void={0: 4})
    sent: list[int] = []
    stuck: dict[int, tuple[int, float]] = {}
    batch._continue_stuck(state, stuck, 10.0, sent.append)
    assert sent == []  # a void lease only just seen: its worker may be about to be re-delivered
    now[0] = 110.0
    batch._continue_stuck(state, stuck, 10.0, sent.append)
    assert sent == [0] and state.continued == 1  # 1's lease is live: never
    now[0] = 115.0
    batch._continue_stuck(state, stuck, 10.0, sent.append)
    assert sent == [0]  # again only after another grace
    state.void[0] = 5  # it moved on (a new checkpoint): the clock starts again
    now[0] = 121.0
    batch._continue_stuck(state, stuck, 10.0, sent.append)
    assert sent == [0]
    del state.void[0]  # someone is on it now
    now[0] = 140.0
    batch._continue_stuck(state, stuck, 10.0, sent.append)
    assert sent == [0] and stuck == {}


async def test_look_marks_a_running_run_whose_lease_is_void() -> None:
    import time

    from seamkit._durability.records import CheckpointRecord, StoredCheckpoint
    from seamkit_celery.batch import _look

    rows = {
        "b-0": CheckpointRecord("b-0", 3, "running", "{}", metadata={"owner": "h:1", "lease_until": time.time() - 1}),
        "b-1": CheckpointRecord("b-1", 2, "running", "{}", metadata={"owner": "h:1", "lease_until": time.time() + 60}),
        "b-2": CheckpointRecord("b-2", 5, "running", "{}", metadata={"owner": "h:1"}),  # released
    }

    class Port:
        async def latest(self, run_id: str) -> StoredCheckpoint | None:
            rec = rows.get(run_id)
            return None if rec is None else StoredCheckpoint(rec, ())

    state = BatchState([BatchItem(i, i + 1, "t") for i in range(4)], "b")
    await _look(SimpleNamespace(port=Port()), state, [0, 1, 2, 3])
    assert state.void == {0: 3, 2: 5}
    assert state.status == {0: "running", 1: "running", 2: "running", 3: "new"}
