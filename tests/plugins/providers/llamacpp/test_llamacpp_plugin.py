"""Registration of ``use: llamacpp`` and the quickstart example (no model is loaded here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pydantic
import pytest
from seamkit._plugins.registry import load_registry
from seamkit.composition import load_composition
from seamkit_llamacpp.config import LlamaCppConfig

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "quickstart.yaml"


def test_registers_the_llamacpp_provider_lazily() -> None:
    registry = load_registry()
    spec = registry.resolve("provider", "llamacpp")
    assert spec.config_model() is LlamaCppConfig
    report = next(r for r in registry.reports if r.distribution == "seamkit-llamacpp")
    assert report.status == "ok"
    provider = spec.build({"n_ctx": 1024, "threads": 1})
    assert (provider.provider, provider.model) == ("llamacpp", "gemma-3-270m-q4_k_m.gguf")


def test_plugin_module_imports_nothing_heavy() -> None:
    """``seamkit --help`` imports every plugin module: neither the package nor the plugin module may
    pull in pydantic, llama_cpp or the provider."""
    code = (
        "import sys, seamkit_llamacpp; "
        "print(sorted(m for m in sys.modules if m.startswith(('seamkit', 'pydantic')))); "
        "import seamkit_llamacpp.plugin; "
        "print([m for m in ('llama_cpp', 'pydantic', 'seamkit_llamacpp.provider', 'seamkit_llamacpp.config') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["['seamkit_llamacpp']", "[]"]


def test_config_defaults_and_unknown_keys() -> None:
    cfg = LlamaCppConfig()
    assert (cfg.model_path, cfg.n_ctx, cfg.temperature, cfg.seed, cfg.max_tokens) == (None, 2048, 0.0, 42, 256)
    assert cfg.threads >= 1 and cfg.repack is False and cfg.repeat_tool_calls is False
    with pytest.raises(pydantic.ValidationError, match="n_ctxx"):
        LlamaCppConfig(n_ctxx=10)  # type: ignore[call-arg]


def test_quickstart_example_validates() -> None:
    agent = load_composition(EXAMPLE).agent
    assert agent.model.use == "llamacpp" and agent.model.params == {}
    assert [t.use for t in agent.tools] == ["calculator"] and agent.tool_choice == "required"
