"""The child process of the durability checks: ``python -m pytest_seamkit._durable_child``
reads one JSON request on stdin and serves it (see :func:`pytest_seamkit._durable.serve`).
A module of its own, so that running it does not re-import the module it runs."""

from __future__ import annotations

import asyncio
import json
import sys

from pytest_seamkit._durable import serve


def main() -> int:
    return asyncio.run(serve(json.loads(sys.stdin.read())))


if __name__ == "__main__":
    sys.exit(main())
