"""Plugin discovery and the component registry."""

from seamkit._plugins.registry import ComponentSpec, PluginReport, Registry, get_registry, load_registry

__all__ = ["ComponentSpec", "PluginReport", "Registry", "get_registry", "load_registry"]
