"""Only secrets are masked in the CLI's output: the values of ``${ENV}`` references in
secret-named or ``SecretStr`` parameters (the checkpoints' rule) or from variables named like a
secret, wherever they show up (stdout, stderr, errors, ``--json``); other environment values (a
team name in a prompt) are shown as they are. A short secret (a one-letter password) is never
masked on its own, only inside the longer value it was put into (the DSN, its ``user:pw@``)."""

from __future__ import annotations

import itertools
import json

from cli_testlib import CLI
from hypothesis import given, settings
from hypothesis import strategies as st
from seamkit._cli.scrub import TextScrubber
from seamkit.plugin import mask_secrets

KEY = "sk-digest-key-0123456789"  # audit's digest_key is a SecretStr: a secret
TEAM = "acme-corp"

SECRETIVE = """\
seamkit: 1
agent:
  model: {use: scripted, turns: ["The team is ${TEAM}; the key is ${DIGEST}."]}
  middlewares: [{use: audit, digest_key: "${DIGEST}"}]
  checkpoints: {use: memory}
"""

TYPED = """\
seamkit: 1
agent:
  model: {use: scripted, turns: ["not json: team ${TEAM}, key ${DIGEST}"], repeat: true}
  middlewares: [{use: audit, digest_key: "${DIGEST}"}]
  checkpoints: {use: memory}
  output: {json_schema: {type: object, properties: {a: {type: integer}}, required: [a]}}
  max_steps: 3
"""

ENV = {"TEAM": TEAM, "DIGEST": KEY}


def test_a_value_that_is_no_secret_is_shown_and_a_secret_is_masked(cli: CLI, write) -> None:
    path = write("team.yaml", SECRETIVE)
    r = cli("run", str(path), "hi", env=ENV)
    assert r.returncode == 0, r
    assert f"The team is {TEAM}; the key is ***." in r.stdout
    assert KEY not in r.stdout + r.stderr
    j = cli("run", "--json", str(path), "hi", env=ENV)
    assert j.returncode == 0, j
    text = "".join(e.get("text", "") for e in map(json.loads, j.stdout.splitlines()) if e["kind"] == "text")
    assert text == f"The team is {TEAM}; the key is ***."
    assert KEY not in j.stdout + j.stderr


def test_a_secret_is_masked_on_stderr_and_in_json_failures(cli: CLI, write) -> None:
    path = write("typed.yaml", TYPED)
    r = cli("run", str(path), "hi", env=ENV)
    assert r.returncode == 1, r
    assert "OutputValidationError" in r.stderr
    assert f"the model's last answer was: 'not json: team {TEAM}, key ***'" in r.stderr
    assert KEY not in r.stdout + r.stderr
    j = cli("run", "--json", str(path), "hi", env=ENV)
    last = json.loads(j.stdout.splitlines()[-1])
    assert last["kind"] == "run_failed", j
    assert KEY not in j.stdout + j.stderr and "***" in j.stdout


def test_a_variable_named_like_a_secret_is_masked_wherever_it_is_used(cli: CLI, write) -> None:
    path = write("named.yaml", """\
seamkit: 1
agent:
  model: {use: scripted, turns: ["token: ${SERVICE_TOKEN}"]}
  checkpoints: {use: memory}
""")
    r = cli("run", str(path), "hi", env={"SERVICE_TOKEN": "tok-abcdef"})
    assert r.returncode == 0 and "token: ***" in r.stdout and "tok-abcdef" not in r.stdout + r.stderr, r


def test_a_one_letter_password_does_not_mask_that_letter_in_words(cli: CLI, write) -> None:
    path = write("pg.yaml", """\
seamkit: 1
agent:
  model: {use: scripted, turns: ["e"]}
  checkpoints: {use: postgres, dsn: "postgresql://user:${PGPW}@127.0.0.1:1/db"}
""")
    r = cli("run", str(path), "the secret", env={"PGPW": "e"})
    assert r.returncode == 1, r
    # the connection error's words keep their e's (before: "conn***ction r***fus***d")
    assert "Connection refused" in r.stderr and "server" in r.stderr, r
    j = cli("run", "--json", str(path), "hi", env={"PGPW": "e"})
    message = json.loads(j.stdout.splitlines()[-1])["error"]["message"]
    assert "Connection refused" in message, j


def test_a_short_secret_is_masked_only_inside_the_longer_value_it_was_put_into() -> None:
    dsn = "postgresql://u:e@host/db"
    s = TextScrubber([dsn, "u:e@"])
    shown = "".join(s.feed(piece) for piece in ["cannot open postgresql://u:", "e@host/db: the", " e ", "elephant e"])
    assert shown + s.drain() == "cannot open ***: the e elephant e"
    assert TextScrubber(["e"]).scrub("the e elephant") == "the e elephant"  # never on its own
    assert mask_secrets("password=e; connection refused", ["e"]) == "password=e; connection refused"
    # given with the longer value: that value and its URL user-info, not the letter elsewhere
    assert mask_secrets(f"{dsn} e; for u:e@host", ["e", dsn]) == "*** e; for ***host"


def test_validate_with_a_short_dsn_password_is_not_garbled(cli: CLI, write) -> None:
    path = write("pg.yaml", """\
seamkit: 1
agent:
  model: {use: scripted, turns: ["ok"]}
  checkpoints: {use: postgres, dsn: "postgresql://user:${PGPW}@127.0.0.1:9/db"}
""")
    for pw in ("g", "pg", "e", "a"):
        r = cli("validate", str(path), env={"PGPW": pw})
        assert r.returncode == 0, r
        assert "***" not in r.stdout + r.stderr, (pw, r)
        assert "seamkit runs list --agent" in r.stdout and "agent 'pg'" in r.stdout, (pw, r)


def test_a_one_letter_api_key_does_not_garble_output(cli: CLI, write) -> None:
    path = write("k.yaml", """\
seamkit: 1
agent:
  model: {use: scripted, turns: ["use the api, e.g. E or e"]}
  prompt: "Call with ${MY_API_KEY}."
  checkpoints: {use: memory}
""")
    r = cli("run", str(path), "hi", env={"MY_API_KEY": "e"})
    assert r.returncode == 0, r
    assert r.stdout == "use the api, e.g. E or e\n", r


def test_a_short_secret_in_a_longer_secret_value_masks_that_value(cli: CLI, write) -> None:
    path = write("k.yaml", """\
seamkit: 1
agent:
  model: {use: scripted, turns: ["calling https://bot:${PW}@example.test/hook as bot:${PW}@ with ${PW} words"]}
  middlewares: [{use: audit, digest_key: "https://bot:${PW}@example.test/hook"}]
  checkpoints: {use: memory}
""")
    r = cli("run", str(path), "hi", env={"PW": "x9"})
    assert r.returncode == 0, r
    assert r.stdout == "calling *** as *** with x9 words\n", r


_ALPHABET = st.characters(codec="utf-8", categories=("L", "N", "P", "Zs"))


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(_ALPHABET, min_size=4, max_size=16).filter(lambda s: s.strip() == s and s),
    pieces=st.lists(st.text(_ALPHABET, max_size=12), max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
def test_every_occurrence_of_a_long_secret_is_masked(secret: str, pieces: list[str], cuts: list[int]) -> None:
    text = secret.join(pieces) if len(pieces) > 1 else f"{pieces[0] if pieces else ''}{secret}"
    assert mask_secrets(text, [secret]).count(secret) == 0
    s = TextScrubber([secret])
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    streamed = "".join(s.feed(text[a:b]) for a, b in itertools.pairwise(points)) + s.drain()
    assert secret not in streamed


_WORD = st.text(st.characters(categories=("Ll", "Lu", "Nd")), min_size=1, max_size=10)


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(st.characters(categories=("Ll", "Lu", "Nd")), min_size=1, max_size=3),
    words=st.lists(_WORD, min_size=1, max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
def test_a_short_secret_alone_is_never_masked(secret: str, words: list[str], cuts: list[int]) -> None:
    # in words or standing alone: a short secret on its own is not "the secret"
    text = " ".join([*words, secret, *(w + secret for w in words)])
    assert mask_secrets(text, [secret]) == text
    s = TextScrubber([secret])
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    streamed = "".join(s.feed(text[a:b]) for a, b in itertools.pairwise(points)) + s.drain()
    assert streamed == text
    # inside the longer value it was put into, that whole value is masked
    value = f"scheme://user:{secret}@host/path"
    assert mask_secrets(f"{text} {value} {text}", [secret, value]) == f"{text} *** {text}"


def test_ask_masks_no_short_secret_on_its_own() -> None:
    from seamkit._calls.ask import scrub

    assert scrub("connection refused: key=e", ["e"]) == "connection refused: key=e"
    assert scrub("bad url http://u:e@h/", ["e", "http://u:e@h/"]) == "bad url ***"
    assert scrub('{"k": "sk-abcdef\\"x"}', ['sk-abcdef"x']) == '{"k": "***"}'


def test_credential_names_are_secret_and_counts_of_tokens_are_not() -> None:
    from seamkit.plugin import is_secret_name

    for name in ("token", "access_token", "auth_token", "bearer_token", "refresh_token", "API_TOKEN", "x-auth-token",
                 "api_key", "X-Api-Key", "password", "Authorization", "client_secret"):
        assert is_secret_name(name), name
    for name in ("max_tokens", "max_output_tokens", "max_completion_tokens", "n_tokens", "num_tokens",
                 "tokens_per_minute", "budget_tokens", "max_token_count", "tokenizer", "MAX_TOKENS", "temperature"):
        assert not is_secret_name(name), name
