"""Tools: the ``@tool`` decorator and the ``ToolRegistry``."""

from seamkit._tools.decorator import FunctionTool, tool
from seamkit._tools.registry import ToolRegistry

__all__ = ["FunctionTool", "ToolRegistry", "tool"]
