#!/usr/bin/env bash
# README command 2: set up .venv and run the whole test suite (lint, types, tests).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/core -x`.
set -euo pipefail
source "$(dirname "$0")/_setup.sh"
source "$(dirname "$0")/_services.sh"

echo "== ruff" >&2
.venv/bin/ruff check .
echo "== mypy --strict core/" >&2
.venv/bin/mypy
echo "== lint-imports (the layers of docs/layers.md, no import cycles, no plugin or SDK in the host)" >&2
.venv/bin/lint-imports
echo "== pytest" >&2
exec .venv/bin/pytest -p no:cacheprovider --timeout=600 "$@"
