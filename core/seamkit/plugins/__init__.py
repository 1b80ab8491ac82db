"""Plugin discovery and the component registry."""

from seamkit.plugins.registry import ComponentSpec, PluginReport, Registry, get_registry, load_registry

__all__ = ["ComponentSpec", "PluginReport", "Registry", "get_registry", "load_registry"]
