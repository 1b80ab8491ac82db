"""The ``egress`` middleware and the ``egress`` guardrail: URL arguments found through the tool's
parameters schema (``format: uri`` and kin, nested) or the config's ``url_arguments``, checked
(resolving) before the tool runs; a refusal means the tool is not run."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from egress_net import PRIVATE, PUBLIC, StubResolver
from pydantic import BaseModel, Field, HttpUrl, StringConstraints
from seamkit._guardrails import ALLOW, Guard, GuardContext
from seamkit._runtime.invoker import Invoker
from seamkit._tools.decorator import tool
from seamkit._tools.registry import ToolRegistry
from seamkit.errors import EffectNotApplied
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.values import ToolCall
from seamkit_guardrails_web.config import EgressConfig
from seamkit_guardrails_web.errors import EgressRefused
from seamkit_guardrails_web.guardrail import EgressGuardrail, build_egress_guardrail
from seamkit_guardrails_web.middleware import EgressMiddleware, build_egress_middleware
from seamkit_guardrails_web.preflight import url_arguments
from seamkit_guardrails_web.urls import policy_from

Uri = Annotated[str, Field(json_schema_extra={"format": "uri"})]


class Source(BaseModel):
    title: str
    link: HttpUrl  # pydantic emits format: uri


def _tools(ran: list[str]) -> list[Any]:
    @tool(side_effecting=False)
    def summarise(url: Uri, words: int = 50) -> str:
        """Summarise a page.

        Args:
            url: the page
            words: length
        """
        ran.append(url)
        return "summary"

    @tool(side_effecting=True)
    def post_webhook(endpoint: str, body: str) -> str:
        """Post a webhook (no URL declared in the schema).

        Args:
            endpoint: where to post
            body: what to post
        """
        ran.append(endpoint)
        return "posted"

    @tool(side_effecting=False)
    def cite(sources: list[Source], note: str | None = None) -> str:
        """Cite sources.

        Args:
            sources: the sources
            note: a note
        """
        ran.extend(str(s.link) for s in sources)
        return "cited"

    return [summarise, post_webhook, cite]


def _middleware(**kw: Any) -> EgressMiddleware:
    return EgressMiddleware(policy_from(EgressConfig()), resolver=StubResolver([PUBLIC]), **kw)


def test_url_arguments_walk_the_schema_nested_and_by_name() -> None:
    ran: list[str] = []
    summarise, post, cite = _tools(ran)
    assert url_arguments(summarise.schema.parameters, {"url": "http://a.example/", "words": 3}) == [
        ("url", "http://a.example/")]
    args = {"sources": [{"title": "x", "link": "http://b.example/"}, {"title": "y", "link": "http://c.example/"}],
            "note": "http://not-a-url-argument.example/"}
    assert url_arguments(cite.schema.parameters, args) == [
        ("sources[0].link", "http://b.example/"), ("sources[1].link", "http://c.example/")]
    assert url_arguments(post.schema.parameters, {"endpoint": "http://d.example/", "body": "x"}) == []
    assert url_arguments(post.schema.parameters, {"endpoint": "http://d.example/", "body": "x"}, ["endpoint"]) == [
        ("endpoint", "http://d.example/")]
    refs = {"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}},
            "$defs": {"P": {"anyOf": [{"type": "string", "format": "iri-reference"}, {"type": "null"}]}}}
    assert url_arguments(refs, {"p": "http://e.example/"}) == [("p", "http://e.example/")]


async def test_a_refused_declared_url_argument_means_the_tool_is_not_run() -> None:
    ran: list[str] = []
    inv = Invoker(ScriptedModel([]), ToolRegistry(_tools(ran)), [build_mw := _middleware()])
    assert build_mw.kinds == {"tool"}
    result = await inv.call_tool(ToolCall("c1", "summarise", {"url": "http://169.254.169.254/latest/"}),
                                 make_test_ctx())
    assert result.is_error and "EgressRefused" in result.content and "metadata" in result.content
    assert "argument 'url' of tool 'summarise'" in result.content
    assert ran == []
    ok = await inv.call_tool(ToolCall("c2", "summarise", {"url": "https://www.example.com/"}), make_test_ctx())
    assert not ok.is_error and ran == ["https://www.example.com/"]


async def test_a_nested_url_resolving_privately_is_refused() -> None:
    ran: list[str] = []
    resolver = StubResolver([PUBLIC], [PRIVATE])
    mw = EgressMiddleware(policy_from(EgressConfig()), resolver=resolver)
    inv = Invoker(ScriptedModel([]), ToolRegistry(_tools(ran)), [mw])
    args = {"sources": [{"title": "a", "link": "https://www.example.com/"},
                        {"title": "b", "link": "https://intranet.example.net/"}]}
    result = await inv.call_tool(ToolCall("c1", "cite", args), make_test_ctx())
    assert result.is_error and "sources[1].link" in result.content and "private" in result.content
    assert ran == [] and resolver.queries == ["www.example.com", "intranet.example.net"]


async def test_url_arguments_config_covers_undeclared_tools_and_side_effects_are_not_applied() -> None:
    ran: list[str] = []
    mw = build_egress_middleware(EgressConfig(url_arguments={"post_webhook": ["endpoint"]}))
    inv = Invoker(ScriptedModel([]), ToolRegistry(_tools(ran)), [mw])
    call = ToolCall("c1", "post_webhook", {"endpoint": "http://10.0.0.5/hook", "body": "x"})
    with pytest.raises(EffectNotApplied) as info:
        await inv.call_effect(call, make_test_ctx())
    assert isinstance(info.value.__cause__, EgressRefused) and info.value.__cause__.category == "private"
    result = await inv.call_tool(call, make_test_ctx())
    assert result.is_error and ran == []
    # without the config entry, the undeclared argument is not checked (the middleware cannot guess)
    unguarded = Invoker(ScriptedModel([]), ToolRegistry(_tools(ran)), [_middleware()])
    assert not (await unguarded.call_tool(call, make_test_ctx())).is_error and ran == ["http://10.0.0.5/hook"]


def test_an_inert_middleware_or_guardrail_cannot_exist() -> None:
    with pytest.raises(TypeError, match="an inert security control must not exist"):
        EgressMiddleware(policy=None)
    with pytest.raises(TypeError, match="an inert security control must not exist"):
        EgressGuardrail(policy=None)
    with pytest.raises(TypeError, match="an inert security control must not exist"):
        build_egress_middleware(None)  # type: ignore[arg-type]


async def test_the_guardrail_blocks_a_refused_url_and_allows_the_rest() -> None:
    ran: list[str] = []
    summarise, post, _ = _tools(ran)
    g = EgressGuardrail(policy_from(EgressConfig(egress_allow=["example.com"])),
                        url_arguments={"post_webhook": ["endpoint"]}, resolver=StubResolver([PUBLIC]))
    guard = Guard(g, at=["tool"])
    assert guard.name == "egress" and guard.at == ("tool",)

    def ctx(t: Any) -> GuardContext:
        return GuardContext("tool", make_test_ctx(), tool=t.schema)

    assert await g.check_tool_call(ToolCall("1", "summarise", {"url": "https://docs.example.com/a"}),
                                   ctx(summarise)) is ALLOW
    assert await g.check_tool_call(ToolCall("2", "summarise", {"url": "nothing", "words": 2}), ctx(post)) is ALLOW
    v = await g.check_tool_call(ToolCall("3", "summarise", {"url": "https://evilexample.com/"}), ctx(summarise))
    assert v.action == "block" and "not_allowed" in v.reason and "evilexample.com" in v.reason
    v = await g.check_tool_call(ToolCall("4", "post_webhook", {"endpoint": "http://[::ffff:a9fe:a9fe]/", "body": ""}),
                                GuardContext("tool", make_test_ctx(), tool=None))  # unknown schema: names still work
    assert v.action == "block" and "metadata" in v.reason and "endpoint" in v.reason
    rebinding = EgressGuardrail(policy_from(EgressConfig()), resolver=StubResolver([PUBLIC, PRIVATE]))
    v = await rebinding.check_tool_call(ToolCall("5", "summarise", {"url": "https://www.example.com/"}),
                                        ctx(summarise))
    assert v.action == "block" and "private" in v.reason
    assert isinstance(build_egress_guardrail(EgressConfig()), EgressGuardrail)


async def test_the_middleware_is_wired_from_yaml(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from seamkit.composition import build_agent, loads_composition

    monkeypatch.chdir(tmp_path)
    text = """
seamkit: 1
agent:
  name: egress-yaml
  model:
    use: scripted
    turns:
      - tool_calls: [{name: fetch, arguments: {url: "http://[::ffff:169.254.169.254]/latest/"}}]
      - done
  tools: [{use: fetch}]
  middlewares: [{use: egress, egress_allow: [example.com]}]
  checkpoints: null
"""
    agent = build_agent(loads_composition(text, env={}))
    result = await agent.run("go")
    tool_results = [b for m in result.transcript for b in m.content if getattr(b, "type", "") == "tool_result"]
    assert len(tool_results) == 1 and tool_results[0].is_error
    assert "argument 'url' of tool 'fetch'" in tool_results[0].content  # refused by the middleware
    assert "metadata" in tool_results[0].content


_SLOTS = {"tool": ("tools", "fetch"), "guardrail": ("guardrails", "egress"), "middleware": ("middlewares", "egress")}


@pytest.mark.parametrize("slot", sorted(_SLOTS))
@pytest.mark.parametrize(
    ("setting", "path", "message"),
    [
        ("allow_networks: [10.0.0.0/8, 999.0.0.0/8]", "allow_networks[1]", "not a network"),
        ("allow_networks: [10.0.0.0/33]", "allow_networks[0]", "not a network"),
        ('egress_allow: ["https://a.com"]', "egress_allow[0]", "give the host only"),
        ('egress_allow: ["a.com:8080"]', "egress_allow[0]", "a port belongs in 'ports'"),
        ("ports: [443, 99999]", "ports[1]", "outside 1..65535"),
    ],
)
def test_a_bad_policy_value_fails_validation_at_its_key(slot: str, setting: str, path: str, message: str) -> None:
    from seamkit.composition import loads_composition
    from seamkit.errors import ConfigError

    key, use = _SLOTS[slot]
    text = f"""seamkit: 1
agent:
  model: {{use: scripted, turns: [done]}}
  {key}:
    - use: {use}
      {setting}
"""
    with pytest.raises(ConfigError) as info:
        loads_composition(text, file="bad.yaml", env={})
    (issue,) = info.value.issues
    assert issue.path == f"agent.{key}[0].{path}"
    assert issue.line == 6 and issue.file == "bad.yaml"
    assert message in issue.message


class _NoDns:
    """A resolver as SystemResolver behaves without DNS: getaddrinfo fails (EAI_AGAIN / NXDOMAIN)."""

    async def resolve(self, host: str) -> list[Any]:
        import asyncio
        import socket

        from seamkit_guardrails_web.resolver import SystemResolver

        loop = asyncio.get_running_loop()

        async def getaddrinfo(*args: object, **kw: object) -> list[Any]:
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

        loop.getaddrinfo = getaddrinfo  # type: ignore[method-assign]
        try:
            return await SystemResolver().resolve(host)
        finally:
            del loop.getaddrinfo


@pytest.mark.parametrize("resolver", [_NoDns(), StubResolver([])], ids=["no-dns", "no-address"])
async def test_a_name_that_does_not_resolve_fails_the_guardrail_and_is_not_a_block(resolver: Any) -> None:
    from seamkit._agent.guarding import check
    from seamkit._guardrails import GuardrailTripped
    from seamkit.errors import SeamkitError

    ran: list[str] = []
    summarise, _, _ = _tools(ran)
    call = ToolCall("1", "summarise", {"url": "https://docs.example.com/a"})
    g = EgressGuardrail(policy_from(EgressConfig()), resolver=resolver)
    context = GuardContext("tool", make_test_ctx(), tool=summarise.schema)
    with pytest.raises(SeamkitError) as raised:  # a failure, not a Verdict
        await g.check_tool_call(call, context)
    assert getattr(raised.value, "category", None) == "resolution" and "argument 'url'" in str(raised.value)

    reports: list[tuple[str, str]] = []
    with pytest.raises(GuardrailTripped) as info:  # the host fails closed...
        await check([Guard(g, at=["tool"])], "tool", call, context, lambda g, p, kind, why: reports.append((kind, why)))
    assert info.value.failed and info.value.reason.startswith("ResolutionFailed: ")
    assert await check([Guard(g, at=["tool"], advisory=True)], "tool", call, context,  # ...or warns, if advisory
                       lambda g, p, kind, why: reports.append((kind, why))) is call
    assert [kind for kind, _ in reports] == ["failed"]
    # a name resolving to a refused address stays a block (a verdict), and the middleware is unchanged
    v = await EgressGuardrail(policy_from(EgressConfig()), resolver=StubResolver([PRIVATE])).check_tool_call(
        call, context)
    assert v.action == "block" and "private" in v.reason
    with pytest.raises(EgressRefused) as refused:
        await EgressMiddleware(policy_from(EgressConfig()), resolver=resolver).check_call(call, summarise.schema)
    assert refused.value.category == "resolution"


META = "http://169.254.169.254/latest/meta-data/"


@pytest.mark.parametrize(("schema", "arguments", "path"), [
    ({"type": "object", "patternProperties": {"^[a-z]+$": {"type": "string", "format": "uri"}}},
     {"links": {"a": META}}, "links.a"),
    ({"type": "array", "contains": {"type": "string", "format": "uri"}}, {"links": [META]}, "links[0]"),
    ({"type": "object", "if": {"required": ["kind"]}, "then": {"properties": {"u": {"format": "uri"}}},
      "else": {"properties": {"v": {"format": "uri"}}}}, {"links": {"v": META}}, "links.v"),
    ({"type": "object", "dependentSchemas": {"kind": {"properties": {"u": {"format": "uri"}}}}},
     {"links": {"kind": "x", "u": META}}, "links.u"),
    ({"type": "object", "unevaluatedProperties": {"format": "uri"}}, {"links": {"z": META}}, "links.z"),
    ({"type": "array", "unevaluatedItems": {"format": "uri"}}, {"links": [META]}, "links[0]"),
])
def test_url_arguments_are_found_under_every_applicator_a_schema_can_use(
    schema: dict[str, Any], arguments: dict[str, Any], path: str
) -> None:
    """Outside testing: a pydantic ``dict[Annotated[str, pattern], HttpUrl]`` argument is a
    ``patternProperties`` schema, and its URLs went unchecked (the tool ran with a metadata URL)."""
    parameters = {"type": "object", "properties": {"links": schema}}
    assert url_arguments(parameters, arguments) == [(path, META)]


def test_contains_checks_every_item_of_the_array() -> None:
    """Which items ``contains`` applies to is not decided here: every string item is checked (a
    non-URL item is then refused; over-checking, never missing)."""
    parameters = {"type": "object", "properties": {"links": {"type": "array", "contains": {"format": "uri"}}}}
    assert url_arguments(parameters, {"links": ["x", META]}) == [("links[0]", "x"), ("links[1]", META)]


async def test_a_pydantic_dict_of_urls_with_constrained_keys_is_checked() -> None:
    ran: list[Any] = []

    @tool(side_effecting=False)
    def visit(links: dict[Annotated[str, StringConstraints(pattern=r"^[a-z]+$")], HttpUrl]) -> str:
        """Visit the named links."""
        ran.append(links)
        return "ok"

    g = EgressGuardrail(policy_from(EgressConfig()), resolver=StubResolver([PUBLIC]))
    v = await g.check_tool_call(ToolCall("1", "visit", {"links": {"a": META}}),
                                GuardContext("tool", make_test_ctx(), tool=visit.schema))
    assert v.action == "block" and "links.a" in v.reason and "metadata" in v.reason
