"""The child process of the durability checks: ``python -m pytest_seamkit._durable_child``
reads one JSON request (a line) on stdin and serves it (see :func:`pytest_seamkit._durable.serve`).
A module of its own, so that running it does not re-import the module it runs."""

from __future__ import annotations

import asyncio
import json
import sys

from pytest_seamkit._durable import serve, zygote


def main() -> int:
    request = json.loads(sys.stdin.readline())
    if request.get("action") == "crash":  # forks writers: no event loop may run here first
        return zygote(request)
    return asyncio.run(serve(request))


if __name__ == "__main__":
    sys.exit(main())
