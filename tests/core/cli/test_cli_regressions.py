"""Regression tests for problems a newcomer found in the CLI (one test per problem)."""

from __future__ import annotations

import io
import itertools
import json
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_testlib import CLI, make_dist
from hypothesis import given
from hypothesis import strategies as st
from seamkit._cli.scrub import MASK, ScrubbingWriter, TextScrubber

SECRET = "hunter2SECRETVALUE"
ENV = {"SECRET": SECRET}

LEAKY_PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_providers(register):
    register("leaky", "cli_leaky_impl:make_leaky", config="cli_leaky_impl:LeakyConfig",
             description="Fails with its model_path in the message")


@hookimpl
def seamkit_register_tools(register):
    register("picky", "cli_leaky_impl:make_picky", config="cli_leaky_impl:PickyConfig",
             description="Refuses a missing root when built")
'''

LEAKY_IMPL = '''
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from seamkit.errors import ConfigError, ConfigIssue, FailureClass, ProviderError


class LeakyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model_path: str


class PickyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    root: Path


class Leaky:
    provider = "leaky"
    model = "leaky"

    def __init__(self, path):
        self.path = path

    async def stream(self, request):
        raise ProviderError(f"model file not found: {self.path}", FailureClass.INVALID_REQUEST, provider="leaky")
        yield

    async def chat(self, request):
        raise ProviderError(f"model file not found: {self.path}", FailureClass.INVALID_REQUEST, provider="leaky")


def make_leaky(cfg):
    return Leaky(cfg.model_path)


def make_picky(cfg):
    if not cfg.root.is_dir():
        raise ConfigError([ConfigIssue(f"root directory {str(cfg.root)!r} does not exist", "root")])
    raise AssertionError("not reached in these tests")
'''


@pytest.fixture
def rcli(tmp_path: Path, tools_dist: Path) -> CLI:
    leaky = make_dist(tmp_path / "site-leaky", "cli-leaky", "cli_leaky", LEAKY_PLUGIN,
                      extra={"cli_leaky_impl": LEAKY_IMPL})
    return CLI([tools_dist, leaky], tmp_path)


Write = Callable[[str, str], Path]


def no_secret(*texts: str) -> bool:
    return all(SECRET not in t for t in texts)


# -- 1. secrets are masked in everything run and validate write ---------------------------------


def test_provider_error_with_secret_path_is_masked(rcli: CLI, write: Write) -> None:
    path = write("leaky.yaml", """
        seamkit: 1
        agent:
          model: {use: leaky, model_path: "${SECRET}"}
        """)
    r = rcli("run", str(path), "task", env=ENV)
    assert r.returncode == 1, r
    assert f"ProviderError: leaky: invalid_request: model file not found: {MASK}" in r.stderr
    assert no_secret(r.stdout, r.stderr)
    debug = rcli("run", str(path), "task", env={**ENV, "SEAMKIT_DEBUG": "1"})
    assert debug.returncode == 1 and "Traceback" in debug.stderr, debug
    assert no_secret(debug.stdout, debug.stderr)
    js = rcli("run", "--json", str(path), "task", env=ENV)
    last = json.loads(js.stdout.splitlines()[-1])
    assert last["kind"] == "run_failed" and last["error"]["message"].endswith(f"model file not found: {MASK}")
    assert no_secret(js.stdout, js.stderr)


def test_prompt_id_from_env_is_masked(rcli: CLI, write: Write) -> None:
    path = write("pid.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: [ok]}
          prompt: {template: "hi {{x}}", id: "${SECRET}", version: "1"}
        """)
    r = rcli("run", str(path), "task", env=ENV)
    assert r.returncode == 2 and f"prompt {MASK}@1 needs a variable x" in r.stderr, r
    assert no_secret(r.stdout, r.stderr)


def test_env_ref_in_output_schema_is_masked(rcli: CLI, write: Write) -> None:
    path = write("ref.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: [ok]}
          output: {json_schema: {$ref: "${SECRET}"}}
        """)
    for args in (("validate", str(path)), ("run", str(path), "task")):
        r = rcli(*args, env=ENV)
        assert r.returncode == 2 and "$ref" in r.stderr, r
        assert no_secret(r.stdout, r.stderr)


def test_name_from_env_is_masked_in_validate_and_json_and_split_text(rcli: CLI, write: Write) -> None:
    path = write("named.yaml", """
        seamkit: 1
        agent:
          name: ${SECRET}
          model: {use: scripted, turns: ["the name is ${SECRET}, really"]}
        """)
    v = rcli("validate", str(path), env=ENV)
    assert v.returncode == 0 and f"agent '{MASK}'" in v.stdout and no_secret(v.stdout, v.stderr), v
    js = rcli("run", "--json", str(path), "task", env=ENV)
    assert js.returncode == 0 and no_secret(js.stdout, js.stderr), js
    events = [json.loads(line) for line in js.stdout.splitlines()]
    assert events[0]["kind"] == "run_started" and events[0]["agent"] == MASK
    text_events = [e["text"] for e in events if e["kind"] == "text"]
    assert len(text_events) > 1  # the scripted model streams the secret in pieces
    assert "".join(text_events) == f"the name is {MASK}, really"
    human = rcli("run", str(path), "task", env=ENV)
    assert human.stdout == f"the name is {MASK}, really\n" and no_secret(human.stderr), human


# -- 5. a component refusing its configuration when built: exit 2 -------------------------------


def test_factory_config_error_exits_2(rcli: CLI, write: Write) -> None:
    path = write("picky.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: [ok]}
          tools: [{use: picky, root: /nonexistent/dir}]
        """)
    r = rcli("run", str(path), "task")
    assert r.returncode == 2, r
    assert re.search(r"picky\.yaml:4:\d+: agent\.tools\[0\]\.root: tool 'picky': root directory .* does not exist",
                     r.stderr), r.stderr
    assert "Traceback" not in r.stderr


# -- 6. run --json ends a failed run with run_failed ---------------------------------------------


def test_json_output_validation_failure_ends_with_run_failed(rcli: CLI, write: Write) -> None:
    path = write("bad.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: ["not json", "still not"]}
          output: {json_schema: {type: object}}
        """)
    r = rcli("run", "--json", str(path), "task")
    assert r.returncode == 1, r
    events = [json.loads(line) for line in r.stdout.splitlines()]
    last = events[-1]
    assert last["kind"] == "run_failed" and last["exit_code"] == 1
    assert last["run_id"] == events[0]["run_id"]
    assert last["error"]["type"] == "OutputValidationError" and "did not validate" in last["error"]["message"]


def test_json_provider_error_ends_with_run_failed(rcli: CLI, write: Write) -> None:
    path = write("short.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: [{tool_calls: [{name: add, arguments: {a: 1, b: 1}}]}]}
          tools: [add]
        """)
    r = rcli("run", "--json", str(path), "go")
    last = json.loads(r.stdout.splitlines()[-1])
    assert r.returncode == 1 and last["kind"] == "run_failed" and last["exit_code"] == 1, r
    assert last["error"]["type"] == "ProviderError" and "no turn left" in last["error"]["message"]


def test_json_interrupt_ends_with_run_failed(rcli: CLI, write: Write) -> None:
    path = write("slow.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: [{text: "late", delay: 30}]}
        """)
    proc = rcli.popen("run", "--json", str(path), "task")
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    last = json.loads(out.splitlines()[-1])
    assert last == {"kind": "run_failed", "run_id": first["run_id"],
                    "error": {"type": "KeyboardInterrupt", "message": "interrupted"}, "exit_code": 130}


# -- 7. text layout ------------------------------------------------------------------------------


def test_typed_output_alone_on_stdout(rcli: CLI, write: Write, tmp_path: Path) -> None:
    path = write("typed.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: ["not json", '{"answer": 5}']}
          output: {json_schema: {type: object, properties: {answer: {type: integer}}, required: [answer]}}
        """)
    r = rcli("run", str(path), "task")
    assert r.returncode == 0, r
    assert json.loads(r.stdout) == {"answer": 5}
    err = r.stderr.splitlines()
    assert err[:2] == ["not json", '{"answer": 5}']  # raw text on stderr, one line per turn
    assert "\x1b[" not in r.stderr  # not a terminal: no styling


def test_free_text_turns_are_separated_by_a_newline(rcli: CLI, write: Write) -> None:
    path = write("free.yaml", """
        seamkit: 1
        agent:
          model:
            use: scripted
            turns:
              - text: "let me add"
                tool_calls: [{name: add, arguments: {a: 1, b: 2}}]
              - text: "it is 3"
          tools: [add]
        """)
    r = rcli("run", str(path), "task")
    assert r.returncode == 0, r
    assert r.stdout == "let me add\nit is 3\n"


# -- 4. prompt variables in every prompt form ----------------------------------------------------


def test_vars_fill_a_plain_string_prompt_and_mismatches_are_explained(rcli: CLI, write: Write) -> None:
    path = write("hi.yaml", """
        seamkit: 1
        agent:
          name: hi
          model: {use: scripted, turns: [ok]}
          prompt: "Hi {{who}}"
        """)
    ok = rcli("run", str(path), "task", "--var", "who=a")
    assert ok.returncode == 0 and ok.stdout == "ok\n", ok
    missing = rcli("run", str(path), "task")
    assert missing.returncode == 2 and "prompt hi@1 needs a variable who" in missing.stderr, missing
    assert "--var KEY=VALUE" in missing.stderr
    extra = rcli("run", str(path), "task", "--var", "who=a", "--var", "zz=1")
    assert extra.returncode == 2, extra
    assert "--var zz: the prompt hi@1 does not use it (its variables are who)" in extra.stderr
    assert "pass them" not in extra.stderr
    plain = write("plain.yaml", """
        seamkit: 1
        agent:
          model: {use: scripted, turns: [ok]}
          prompt: "No variables."
        """)
    none = rcli("run", str(plain), "task", "--var", "zz=1")
    assert none.returncode == 2 and "it has no variables" in none.stderr, none


# -- 8. schema -o "" -----------------------------------------------------------------------------


def test_schema_empty_output_name_is_a_usage_error(rcli: CLI) -> None:
    r = rcli("schema", "-o", "")
    assert r.returncode == 2 and "--output needs a file name" in r.stderr and r.stdout == "", r


# -- the scrubbing writer ------------------------------------------------------------------------


def test_scrubbing_writer_masks_a_secret_split_across_writes_and_flushes() -> None:
    sink = io.StringIO()
    w = ScrubbingWriter(sink, [SECRET])
    for piece in ("key: hun", "ter2SEC", "RETVAL", "UE and hun", "gry"):
        w.write(piece)
        w.flush()
    assert SECRET not in sink.getvalue()
    assert sink.getvalue().startswith("key: ")
    w.release()
    assert sink.getvalue() == f"key: {MASK} and hungry"


def test_scrubbing_writer_masks_json_and_repr_forms() -> None:
    secret = 'p"a\\ss\u00e9'
    sink = io.StringIO()
    w = ScrubbingWriter(sink, [secret])
    w.write(json.dumps({"k": secret}) + " " + json.dumps(secret, ensure_ascii=False) + " " + repr(secret))
    w.release()
    assert sink.getvalue() == f'{{"k": "{MASK}"}} "{MASK}" \'{MASK}\''


def test_scrubbing_writer_without_secrets_passes_through() -> None:
    sink = io.StringIO()
    w = ScrubbingWriter(sink, [])
    w.write("abc")
    assert sink.getvalue() == "abc"
    with pytest.raises(AttributeError):
        w.buffer  # noqa: B018  (would bypass the masking)


@given(
    secret=st.text(alphabet="ab", min_size=4, max_size=8),
    text=st.text(alphabet="ab*", max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=40), max_size=6),
)
def test_text_scrubber_pieces_equal_whole_text_replacement(secret: str, text: str, cuts: list[int]) -> None:
    scrubber = TextScrubber([secret])
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    out = "".join(scrubber.feed(text[a:b]) for a, b in itertools.pairwise(bounds)) + scrubber.drain()
    shortest = min(len(secret), max(4, len(secret) // 3))
    parts = [secret[:n] for n in range(shortest, len(secret) + 1)]
    assert secret not in out
    assert not any(p in out for p in parts)  # nor a long enough start of it (a cut-off reply)
    if not any(p in text for p in parts):
        assert out == text  # text with no secret in it passes unchanged


def test_a_reply_cut_off_inside_a_secret_is_masked() -> None:
    # regression: max_tokens ending a reply mid-secret printed "hunter2SECRET"
    for cut in ("hunter", "hunter2", "hunter2SECRET"):
        scrubber = TextScrubber(["hunter2SECRETVALUE"])
        assert scrubber.feed(f"The code is {cut}") + scrubber.drain() == "The code is ***"
        assert TextScrubber(["hunter2SECRETVALUE"]).scrub(f"last answer: '{cut}'") == "last answer: '***'"


# -- 2. recursion: a located configuration error, exit 2 -----------------------------------------


def test_recursive_alias_and_deep_nesting_exit_2(rcli: CLI, write: Write) -> None:
    alias = write("alias.yaml", """
        seamkit: 1
        agent: &a {model: {use: scripted, turns: [x]}, x: *a}
        """)
    deep = "[" * 600 + "]" * 600
    nested = write("deep.yaml", f"""
        seamkit: 1
        agent:
          model: {{use: scripted, turns: [{{tool_calls: [{{name: t, arguments: {{a: {deep}}}}}]}}]}}
        """)
    for path, words in ((alias, "recursive alias"), (nested, "more than 100 levels")):
        for args in (("validate", str(path)), ("run", str(path), "task")):
            r = rcli(*args)
            assert r.returncode == 2, r
            assert re.search(rf"{path.name}:\d+:\d+: .*{words}", r.stderr), r.stderr
            assert "RecursionError" not in r.stderr and "Traceback" not in r.stderr
