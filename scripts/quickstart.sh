#!/usr/bin/env bash
# README command 1: set up .venv and run the quickstart agent (examples/quickstart.yaml) on the
# bundled local model. Pass your own question as the first argument.
set -euo pipefail
source "$(dirname "$0")/_setup.sh"
exec .venv/bin/seamkit run examples/quickstart.yaml "${1:-What is 17 times 23?}"
