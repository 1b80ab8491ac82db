#!/usr/bin/env bash
# One command for the benchmarks: set up .venv (as the README's commands do) and print the numbers.
set -euo pipefail
source "$(dirname "$0")/../scripts/_setup.sh"
exec .venv/bin/python benchmarks/run.py "$@"
