"""``seamkit._lazy.lazy_module``: a module global imported on first use."""

from __future__ import annotations

import subprocess
import sys
import types
from typing import Any

from seamkit._lazy import lazy_module

CODE = """
import sys
from seamkit._lazy import lazy_module

colorsys = lazy_module("colorsys", globals())
assert "colorsys" not in sys.modules and "lazy module 'colorsys'" in repr(colorsys)
assert colorsys.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
assert colorsys is sys.modules["colorsys"]
"""


def test_the_first_attribute_read_imports_the_module_and_rebinds_the_global() -> None:
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_an_alias_is_rebound_and_a_global_rebound_since_is_left_alone() -> None:
    namespace: dict[str, Any] = {}
    namespace["j"] = lazy_module("json", namespace, "j")
    assert namespace["j"].dumps([1]) == "[1]"
    assert isinstance(namespace["j"], types.ModuleType) and namespace["j"] is sys.modules["json"]

    stale = namespace["m"] = lazy_module("json", namespace, "m")
    namespace["m"] = "something else"
    assert stale.loads("2") == 2
    assert namespace["m"] == "something else"
