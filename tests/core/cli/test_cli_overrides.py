"""``-m PROVIDER[:MODEL]`` and ``-o KEY=VALUE`` on ``run`` (``chat``: see test_cli_chat.py) and
``ask -m PROVIDER`` without a model name: the composition changes without editing the file, and a
bad override is reported like a bad line of the file, naming the override (exit 2)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_testlib import CLI
from seamkit.composition import load_composition
from seamkit.composition._overrides import model_override, option_override
from seamkit.errors import ConfigError

SCRIPTED = """
seamkit: 1
agent:
  name: demo
  model: {use: scripted, turns: ["from the file"]}
  tools: [calculator]
  max_steps: 5
  settings: {temperature: 0, max_tokens: 64}
"""

OPENAI = """
seamkit: 1
agent:
  name: demo
  model: {use: openai, model: gpt-4.1-mini}
"""


# -- addressing (the loader, in-process) -----------------------------------------------------------


def load(write: Callable[[str, str], Path], text: str, *specs: str) -> object:
    overrides = [model_override(s[3:]) if s.startswith("-m ") else option_override(s) for s in specs]
    return load_composition(write("c.yaml", text), overrides=overrides)


def test_bare_settings_keys_go_to_the_agents_settings_and_other_bare_keys_to_its_model(
    write: Callable[[str, str], Path]
) -> None:
    c = load(write, SCRIPTED, "temperature=0.2", "max_tokens=9", "delay=0.5")
    assert c.agent.settings.temperature == 0.2 and c.agent.settings.max_tokens == 9  # type: ignore[attr-defined]
    assert c.agent.model.params["delay"] == 0.5  # type: ignore[attr-defined]
    assert c.agent.model.params["turns"] == ["from the file"]  # type: ignore[attr-defined]  (kept)


def test_dotted_paths_are_from_the_agent_or_from_the_top(write: Callable[[str, str], Path]) -> None:
    c = load(write, SCRIPTED, "model.repeat=true", "agent.name=renamed", "settings.seed=7", "agent.max_steps=2")
    assert c.agent.model.params["repeat"] is True  # type: ignore[attr-defined]
    assert c.agent.max_steps == 2 and c.agent.name == "renamed"  # type: ignore[attr-defined]
    assert c.agent.settings.seed == 7  # type: ignore[attr-defined]
    c = load(write, SCRIPTED, "agent.tool_choice=none")
    assert c.agent.tool_choice == "none"  # type: ignore[attr-defined]


def test_m_replaces_the_model_and_o_applies_after_it(write: Callable[[str, str], Path]) -> None:
    c = load(write, OPENAI, "-m llamacpp", "n_ctx=4096")
    assert c.agent.model.use == "llamacpp"  # type: ignore[attr-defined]
    assert c.agent.model.params == {"n_ctx": 4096}  # type: ignore[attr-defined]  (gpt-4.1-mini is gone)
    c = load(write, SCRIPTED, "-m openai:gpt-4.1-mini")
    assert (c.agent.model.use, c.agent.model.params) == ("openai", {"model": "gpt-4.1-mini"})  # type: ignore[attr-defined]


def test_values_are_yaml_scalars(write: Callable[[str, str], Path]) -> None:
    c = load(write, SCRIPTED, 'model.turns=["a", "b"]', "agent.prompt=3.10", "model.delay=0")
    assert c.agent.model.params["turns"] == ["a", "b"]  # type: ignore[attr-defined]
    assert c.agent.prompt.template == "3.10"  # type: ignore[attr-defined]  (text stays text)
    assert c.agent.model.params["delay"] == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize(("specs", "expected"), [
    (["-m nope"], "-m nope: agent.model.use: unknown provider 'nope'"),
    (["-m llamacpp:gemma"], "-m llamacpp:gemma: agent.model: provider 'llamacpp' takes no model name"),
    (["-m openai"], "-m openai: agent.model.model: missing required key 'model'"),
    (["model.n_ctx=lots", "-m llamacpp"], "-o model.n_ctx: agent.model.n_ctx: Input should be a valid integer"),
    (["agent.max_steps=many"], "-o agent.max_steps: agent.max_steps: "),
    (["model.nosuch=1"], "-o model.nosuch: agent.model.nosuch: unknown key 'nosuch' for provider 'scripted'"),
    (["max_steps.x=1"], "-o max_steps.x: agent.max_steps.x: agent.max_steps is a number, not a mapping"),
    (["tools.4.root=x"], "-o tools.4.root: agent.tools[4].root: agent.tools has 1 item: there is no item 4"),
    (["nosuchkey.a=1"], "-o nosuchkey.a: agent.nosuchkey: unknown key"),
    (["max_steps=2"], "-o max_steps: agent.model.max_steps: 'max_steps' is a key of the agent, not a parameter of "
                      "its model (where a bare key goes): write -o agent.max_steps=2"),
])
def test_bad_overrides_are_config_errors_naming_the_override(
    write: Callable[[str, str], Path], specs: list[str], expected: str
) -> None:
    ordered = sorted(specs, key=lambda s: not s.startswith("-m "))  # -m first, as the CLI applies it
    with pytest.raises(ConfigError) as err:
        load(write, SCRIPTED, *ordered)
    assert any(str(i).startswith(expected) for i in err.value.issues), err.value.issues


@pytest.mark.parametrize(("text", "expected"), [
    ("temperature", "expected KEY=VALUE"),
    ("=3", "the key before '=' is empty"),
    ("model..n_ctx=3", "is not a key path"),
])
def test_malformed_options(text: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        option_override(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("", "expected PROVIDER or PROVIDER:MODEL"),
    ("OpenAI:gpt", "must be a component name"),
    ("openai:", "the model after 'openai:' is empty"),
])
def test_malformed_models(text: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        model_override(text)


def test_a_secret_given_with_o_is_masked_in_errors(write: Callable[[str, str], Path]) -> None:
    with pytest.raises(ConfigError) as err:
        load(write, OPENAI, "model.api_key=sk-very-secret-1234", "model.timeout=soon")
    assert "sk-very-secret-1234" not in str(err.value) and "sk-very-secret-1234" not in repr(err.value)


# -- the command line ------------------------------------------------------------------------------


def test_run_takes_m_and_o(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", OPENAI)  # would need an API key: -m replaces its model
    r = cli("run", "demo.yaml", "hi", "-m", "scripted", "-o", 'turns=["from the override"]')
    assert r.returncode == 0, r
    assert r.stdout == "from the override\n"


def test_run_with_a_bad_override_says_which(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", SCRIPTED)
    r = cli("run", "demo.yaml", "hi", "-o", "agent.max_steps=many")
    assert r.returncode == 2, r
    assert "-o agent.max_steps: agent.max_steps: Input should be a valid integer" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli("run", "demo.yaml", "hi", "-o", "max_steps")
    assert r.returncode == 2, r
    assert "argument --option/-o: expected KEY=VALUE" in r.stderr
    r = cli("run", "demo.yaml", "hi", "-m", "nope:x")
    assert r.returncode == 2, r
    assert "-m nope:x: agent.model.use: unknown provider 'nope'" in r.stderr


def test_run_masks_a_secret_given_with_o(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", OPENAI)
    r = cli("run", "demo.yaml", "hi", "-o", "api_key=sk-very-secret-1234", "-o", "timeout=soon")
    assert r.returncode == 2, r
    assert "sk-very-secret-1234" not in r.stderr + r.stdout


def test_ask_takes_a_provider_without_a_model_name(cli: CLI) -> None:
    r = cli("ask", "hi", "-m", "scripted", "-o", 'turns=["no model name needed"]')
    assert r.returncode == 0, r
    assert r.stdout == "no model name needed\n"


@pytest.mark.slow
def test_ask_and_run_on_the_bundled_model_without_a_model_name(cli: CLI, write: Callable[[str, str], Path]) -> None:
    schema = write("answer.json", '{"type": "object", "properties": {"answer": {"type": "integer"}}, '
                                  '"required": ["answer"]}')
    r = cli("ask", "What is 2 + 2?", "-m", "llamacpp", "--schema", str(schema), "--max-tokens", "24",
            "-o", "threads=2", timeout=300)
    assert r.returncode == 0, r
    assert '"answer":' in r.stdout
    write("demo.yaml", OPENAI)
    r = cli("run", "demo.yaml", "What is 2 + 2?", "-m", "llamacpp", "-o", "threads=2", "-o", "max_tokens=24",
            "-o", "agent.output.json_schema={type: object, properties: {answer: {type: integer}}, required: [answer]}",
            timeout=300)
    assert r.returncode == 0, r
    assert '"answer":' in r.stdout


def test_ask_o_temperature_and_max_tokens_are_the_calls_settings_as_in_run(cli: CLI) -> None:
    import json

    r = cli("ask", "hi", "-m", "scripted", "-o", 'turns=["x"]', "-o", "temperature=0.5", "-o", "max_tokens=7",
            "--json")
    assert r.returncode == 0, r
    settings = json.loads(r.stdout)["settings"]
    assert settings["temperature"] == 0.5 and settings["max_tokens"] == 7
    r = cli("ask", "hi", "-m", "scripted", "-o", 'turns=["x"]', "-o", "temperature=hot")
    assert r.returncode == 2, r
    assert "-o temperature: expected a number such as 0.2, got 'hot'" in r.stderr
    r = cli("ask", "hi", "-m", "scripted", "-o", 'turns=["x"]', "-o", "temperature=0.1", "--temperature", "0.2")
    assert r.returncode == 2, r
    assert "-o temperature and --temperature both set it" in r.stderr


def test_resume_rebuilds_the_agent_with_the_runs_overrides(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", OPENAI + "  tools: [calculator]\n  approvals: {calculator: every_call}\n")
    turns = ('turns=[{tool_calls: [{id: c1, name: calculator, arguments: {expression: "2 + 3"}}]}, '
             '"five, from the override"]')
    r = cli("run", "demo.yaml", "2 + 3?", "-m", "scripted", "-o", turns, "-o", "follow_transcript=true")
    assert r.returncode == 3, r  # waits for approval
    run_id = r.stderr.split("seamkit resume ")[1].split()[0]
    # the file's model is openai (no key here): the resume must use the run's -m/-o again
    r = cli("resume", run_id, "--approve", "c1", env={"OPENAI_API_KEY": ""})
    assert r.returncode == 0, r
    assert r.stdout.endswith("five, from the override\n")


def test_resume_takes_overrides_that_replace_the_runs_own(cli: CLI, write: Callable[[str, str], Path]) -> None:
    # a run started with an override that fails (a server nobody listens on) is continued on
    # another model given to resume; the run's own -o still applies where not replaced
    write("demo.yaml", OPENAI)
    r = cli("run", "demo.yaml", "hi", "-m", "openai_chat:x", "-o", "base_url=http://127.0.0.1:9/v1",
            "-o", "agent.prompt=be brief")
    assert r.returncode == 1, r
    run_id = r.stderr.split("seamkit resume ")[1].split()[0]
    r = cli("resume", run_id, "--allow-finished", "-m", "scripted", "-o", 'turns=["resumed on scripted"]')
    assert r.returncode == 0, r
    assert r.stdout.endswith("resumed on scripted\n")
    r = cli("runs", "show", run_id, "--json")
    assert "be brief" in json.dumps(json.loads(r.stdout)["transcript"][0])  # the run's own -o kept


def test_a_secret_override_is_not_stored_with_the_run(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", OPENAI)
    r = cli("run", "demo.yaml", "hi", "-m", "scripted", "-o", 'turns=["ok"]', "-o", "agent.prompt=hello")
    assert r.returncode == 0, r
    store = (cli.cwd / ".seamkit" / "seamkit.db").read_bytes()
    assert b"agent.prompt=hello" in store  # the overrides are kept with the run...
    r = cli("run", "demo.yaml", "hi", "-m", "openai:gpt-4.1-mini", "-o", "api_key=sk-very-secret-1234",
            "-o", "base_url=http://127.0.0.1:9/v1")  # nothing listens there: the run fails, stored
    assert "-o api_key not stored with the run" in r.stderr, r
    assert b"sk-very-secret-1234" not in (cli.cwd / ".seamkit" / "seamkit.db").read_bytes()  # ...secrets never
    # the resume command pastes as printed; the next line says what to give again
    lines = r.stderr.splitlines()
    i = next(n for n, line in enumerate(lines) if "continue it with: " in line)
    command = shlex.split(lines[i].split("continue it with: ")[1])
    assert command[:2] == ["seamkit", "resume"] and command[-1] == "--allow-finished", command
    assert "(add -o api_key again, with its value" in lines[i + 1], lines
    # a resume without it says it was not stored (never its value)
    r = cli("resume", command[2], "--allow-finished", env={"OPENAI_API_KEY": ""})
    assert f"run {command[2]} was started with -o api_key, not stored" in r.stderr, r
    assert "sk-very-secret-1234" not in r.stderr + r.stdout


def _store_bytes(cli: CLI) -> bytes:
    """The raw bytes of the run store: the SQLite file and its write-ahead log."""
    return b"".join(p.read_bytes() for p in (cli.cwd / ".seamkit").glob("seamkit.db*"))


@pytest.mark.parametrize("options", [
    # a secret-named key inside a mapping value, in flow form and nested
    ['agent.model={use: openai_chat, model: gpt-x, base_url: "http://127.0.0.1:9/v1", api_key: LITSECRET_BBB222}'],
    ["-m", "openai:gpt-x", "base_url=http://127.0.0.1:9/v1", "headers={Authorization: Bearer LITSECRET_CCC333}"],
    ["-m", "openai:gpt-x", "base_url=http://127.0.0.1:9/v1", "headers={X-Api-Key: LITSECRET_DDD444}"],
    ["agent.model={use: openai_chat, model: gpt-x, base_url: 'http://127.0.0.1:9/v1', api_key: x, "
     "headers: {X-Custom: LITSECRET_EEE555}}"],
    # a URL with a password in a parameter not named like a secret
    ["-m", "openai:gpt-x", "base_url=http://user:LITSECRET_FFF666@127.0.0.1:9/v1", "api_key=x"],
    # a Bearer token under a key not named like a secret
])
def test_an_override_giving_a_secret_in_its_value_is_not_stored(
    cli: CLI, write: Callable[[str, str], Path], options: list[str]
) -> None:
    write("demo.yaml", SCRIPTED)
    args: list[str] = []
    for o in options:
        args += [o] if o.startswith("-m") or args[-1:] == ["-m"] else ["-o", o]
    r = cli("run", "demo.yaml", "hi", *args)
    assert "not stored with the run" in r.stderr, r
    assert "LITSECRET" not in r.stderr + r.stdout
    assert b"LITSECRET" not in _store_bytes(cli)
    r = cli("runs", "list", "--json")
    run_id = __import__("json").loads(r.stdout)[0]["run_id"] if r.stdout.startswith("[") else None
    if run_id is not None:
        r = cli("runs", "show", run_id, "--json")
        assert "LITSECRET" not in r.stdout + r.stderr


def test_an_override_giving_a_secret_in_chat_is_not_stored(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", SCRIPTED)
    r = cli("chat", "demo.yaml", "-o", "agent.prompt=use token=LITSECRET_HHH888", "-o", "agent.name=kept",
            input="hi\n")
    assert r.returncode == 0, r
    assert "-o agent.prompt not stored with the run" in r.stderr
    store = _store_bytes(cli)
    # the prompt is in the run's transcript, as any prompt; the override is not in its metadata
    assert b"agent.prompt=" not in store and b"agent.name=kept" in store


def test_an_override_giving_a_bearer_token_is_not_stored(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", SCRIPTED)
    r = cli("run", "demo.yaml", "hi", "-o", "agent.prompt=Send Bearer LITSECRET_GGG777", "-o", "agent.name=kept")
    assert r.returncode == 0, r
    assert "-o agent.prompt not stored with the run" in r.stderr and "LITSECRET" not in r.stderr
    store = _store_bytes(cli)
    assert b"agent.prompt=" not in store and b"agent.name=kept" in store


def test_may_hold_secret_counts_the_compositions_secret_values() -> None:
    from seamkit.composition._overrides import may_hold_secret

    o = option_override("model.dsn=plainlooking")  # a SecretStr parameter: among the composition's secrets
    assert may_hold_secret(o, ["plainlooking"])
    assert not may_hold_secret(o, ["other"])
    assert not may_hold_secret(option_override("agent.prompt=hello"))
    assert may_hold_secret(option_override("model={client: {auth_token: x}}"))
    assert not may_hold_secret(model_override("openai:gpt-x"))


def test_max_tokens_overrides_are_stored_and_resumed(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", OPENAI)
    r = cli("run", "demo.yaml", "hi", "-m", "scripted", "-o", 'turns=["ok"]', "-o", "max_tokens=64",
            "-o", "agent.settings.max_tokens=65")
    assert r.returncode == 0, r
    assert "not stored" not in r.stderr
    store = _store_bytes(cli)
    assert b"max_tokens=64" in store and b"agent.settings.max_tokens=65" in store


@pytest.mark.parametrize("command", ["run", "ask"])
def test_a_deeply_nested_value_is_a_clean_usage_error(
    cli: CLI, write: Callable[[str, str], Path], command: str
) -> None:
    write("demo.yaml", SCRIPTED)
    where = ["run", "demo.yaml", "hi"] if command == "run" else ["ask", "hi", "-m", "scripted"]
    r = cli(*where, "-o", "model.turns=" + "[" * 5000 + "]" * 5000)
    assert r.returncode == 2, r
    assert "nested more than 100 levels deep" in r.stderr and "RecursionError" not in r.stderr
    r = cli(*where, "-o", "model.turns=" + "{a: " * 101 + "}" * 101)
    assert r.returncode == 2 and "nested more than 100 levels deep" in r.stderr, r
    r = cli(*where, "-o", "model.turns=" + "[" * 100 + "]" * 100)  # as deep as a file may nest: not refused here
    assert "nested more than" not in r.stderr, r


def test_ask_o_reads_values_as_run_o() -> None:
    from seamkit._cli.ask_cmd import _option
    from seamkit.composition._overrides import parse_value

    for raw in ("[asked]", '["json"]', "{a: 1, b: [x, 'y z']}", '{"a": 1}', "3", "0.5", "true", "null", "text",
                '"quoted: text"', "[unclosed"):
        assert _option("turns=" + raw) == ("turns", parse_value(raw))
    assert parse_value("[asked]") == ["asked"] and parse_value('"quoted: text"') == "quoted: text"
    assert _option("api_key=12345") == ("api_key", "12345")  # a secret stays text


def test_ask_takes_yaml_flow_values(cli: CLI) -> None:
    r = cli("ask", "hi", "-m", "scripted", "-o", "turns=[asked]")
    assert r.returncode == 0, r
    assert r.stdout == "asked\n"


@pytest.mark.parametrize(("spec", "expected"), [
    # a bare key of the agent (not its model's): the form that works
    ("max_steps=3", "-o max_steps: agent.model.max_steps: 'max_steps' is a key of the agent, not a parameter of "
                    "its model (where a bare key goes): write -o agent.max_steps=3"),
    # a list index where the agent has no such list
    ("tools.9.root=/", "-o tools.9.root: agent.tools[9].root: agent.tools is empty (no items): there is no item 9"),
    ("agent.handoffs.0.filter=all", "-o agent.handoffs.0.filter: agent.handoffs[0].filter: agent.handoffs is not set"),
    # a count is not a boolean
    ("agent.max_steps=true", "-o agent.max_steps: agent.max_steps: a count is a whole number of at least 1, not "
                             "true/false"),
])
def test_misplaced_overrides_say_what_works(write: Callable[[str, str], Path], spec: str, expected: str) -> None:
    text = SCRIPTED.replace("  tools: [calculator]\n", "  tools: []\n") if spec.startswith("tools") else SCRIPTED
    with pytest.raises(ConfigError) as err:
        load(write, text, spec)
    assert expected in str(err.value), str(err.value)
    assert "expected a list, not a mapping" not in str(err.value)


def test_a_secret_override_with_a_bad_value_says_it_came_from_o(write: Callable[[str, str], Path]) -> None:
    with pytest.raises(ConfigError) as err:
        load(write, OPENAI, "api_key=[x]")
    assert "not shown, it was given with -o api_key" in str(err.value)
    assert "environment variable" not in str(err.value)


def test_a_count_from_the_environment_is_still_read(write: Callable[[str, str], Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPS", "3")
    c = load(write, SCRIPTED.replace("max_steps: 5", "max_steps: ${STEPS}"))
    assert c.agent.max_steps == 3  # type: ignore[attr-defined]


def test_a_huge_list_of_bad_values_prints_its_first_problems(cli: CLI, write: Callable[[str, str], Path]) -> None:
    write("demo.yaml", SCRIPTED)
    r = cli("run", "demo.yaml", "hi", "-o", "model.turns=[" + ",".join(["[1]"] * 30_000) + "]")
    assert r.returncode == 2, r
    lines = r.stderr.splitlines()
    assert len(lines) < 60, len(lines)
    assert lines[-1] == "... and 59,950 more problems (fix these first)", lines[-1]
