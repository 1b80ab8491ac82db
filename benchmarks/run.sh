#!/usr/bin/env bash
# One command for the benchmarks: set up .venv (as the README's commands do) and print the numbers.
#   bash benchmarks/run.sh                  W1-W3 (benchmarks/run.py)
#   bash benchmarks/run.sh checkpoints ...  per-step checkpoint cost vs LangGraph (benchmarks/checkpoints.py;
#                                           installs the pinned LangGraph packages and PostgreSQL/Redis when missing)
set -euo pipefail
source "$(dirname "$0")/../scripts/_setup.sh"
if [ "${1:-}" = "checkpoints" ]; then
  shift
  source scripts/_services.sh
  lg_stamp=".venv/.seamkit-bench-langgraph"
  lg_want="$(sha256sum benchmarks/requirements-langgraph.txt | cut -c1-16)"
  if [ ! -f "$lg_stamp" ] || [ "$(cat "$lg_stamp")" != "$lg_want" ]; then
    echo "seamkit bench: installing LangGraph (benchmarks/requirements-langgraph.txt) into .venv" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check -r benchmarks/requirements-langgraph.txt
    echo "$lg_want" > "$lg_stamp"
  fi
  exec .venv/bin/python benchmarks/checkpoints.py "$@"
fi
exec .venv/bin/python benchmarks/run.py "$@"
