"""Tools: the ``@tool`` decorator and the ``ToolRegistry``."""

from seamkit.tools.decorator import FunctionTool, tool
from seamkit.tools.registry import ToolRegistry

__all__ = ["FunctionTool", "ToolRegistry", "tool"]
