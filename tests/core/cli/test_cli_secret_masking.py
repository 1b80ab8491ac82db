"""Only secrets are masked in the CLI's output: the values of ``${ENV}`` references in
secret-named or ``SecretStr`` parameters (the checkpoints' rule) or from variables named like a
secret, wherever they show up (stdout, stderr, errors, ``--json``); other environment values (a
team name in a prompt) are shown as they are. A short secret (a one-letter password) is masked
only where it stands as a token of its own, never inside words."""

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


def test_a_short_secret_standing_as_a_token_is_masked() -> None:
    s = TextScrubber(["e"])
    shown = "".join(s.feed(piece) for piece in ["postgresql://u:", "e@host: the", " e ", "elephant e"]) + s.drain()
    assert shown == "postgresql://u:***@host: the *** elephant ***"
    assert mask_secrets("password=e; connection refused", ["e"]) == "password=***; connection refused"


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
def test_words_holding_a_short_secret_are_kept(secret: str, words: list[str], cuts: list[int]) -> None:
    # every word holds the secret but is longer than it: none is the secret standing alone
    longer = [w + secret if w != secret else w + "x" + secret for w in words]
    text = " ".join(longer)
    assert mask_secrets(text, [secret]) == text
    s = TextScrubber([secret])
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    streamed = "".join(s.feed(text[a:b]) for a, b in itertools.pairwise(points)) + s.drain()
    assert streamed == text
    # and standing alone between words, it is masked
    assert mask_secrets(f"{text} {secret} {text}", [secret]) == f"{text} *** {text}"


def test_ask_masks_a_short_secret_only_as_a_token() -> None:
    from seamkit._calls.ask import scrub

    assert scrub("connection refused: key=e", ["e"]) == "connection refused: key=***"
    assert scrub('{"k": "sk-abcdef\\"x"}', ['sk-abcdef"x']) == '{"k": "***"}'


def test_credential_names_are_secret_and_counts_of_tokens_are_not() -> None:
    from seamkit.plugin import is_secret_name

    for name in ("token", "access_token", "auth_token", "bearer_token", "refresh_token", "API_TOKEN", "x-auth-token",
                 "api_key", "X-Api-Key", "password", "Authorization", "client_secret"):
        assert is_secret_name(name), name
    for name in ("max_tokens", "max_output_tokens", "max_completion_tokens", "n_tokens", "num_tokens",
                 "tokens_per_minute", "budget_tokens", "max_token_count", "tokenizer", "MAX_TOKENS", "temperature"):
        assert not is_secret_name(name), name
