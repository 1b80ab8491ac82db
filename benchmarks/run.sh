#!/usr/bin/env bash
# One command for the benchmarks: set up .venv (as the README's commands do) and print the numbers.
#   bash benchmarks/run.sh                  W1-W3 measured as the peer harness does (benchmarks/run.py; --peers
#                                           also runs ../shared/bench for the ratios to simonw/llm)
#   bash benchmarks/run.sh all [--peers]    every figure with its target, section by section: run.py, memory,
#                                           checkpoints, long_run_bench.py, startup_tools_bench.py,
#                                           local_model_bench.py (each where the file exists), tokens, coerce,
#                                           guardrails, otel; ends with the time it took (benchmarks/README.md)
#   bash benchmarks/run.sh long_run ...     W2 to 2,000 turns: turns 1-20 vs 1,981-2,000, µs per turn and their ratio
#                                           (benchmarks/long_run_bench.py)
#   bash benchmarks/run.sh startup_tools ... import of a usable agent (ms), and W1 with a sync def tool next to an
#                                           async def one, µs per run (benchmarks/startup_tools_bench.py)
#   bash benchmarks/run.sh local_model ...  the bundled local model: tokens/s through seamkit over raw
#                                           llama-cpp-python, idle and with one busy core, and time to first
#                                           token of a fresh seamkit ask (benchmarks/local_model_bench.py)
#   bash benchmarks/run.sh memory ...       resident memory and Python heap per concurrent run, 1,000 scripted runs
#                                           alive at once (benchmarks/memory_bench.py)
#   bash benchmarks/run.sh checkpoints ...  per-step checkpoint cost vs LangGraph (benchmarks/checkpoints.py;
#                                           installs the pinned LangGraph packages and PostgreSQL/Redis when missing)
#   bash benchmarks/run.sh sse ...          SSE parsing MB/s and deltas/s, seamkit-http vs the openai SDK's parser
#                                           (benchmarks/sse_bench.py; installs benchmarks/requirements-sse.txt)
#   bash benchmarks/run.sh tokens ...       token estimator cost on the 324k-character transcript (benchmarks/tokens_bench.py)
#   bash benchmarks/run.sh coerce ...       output_coerce partial-parse cost of a 50 KB object streamed in 250..4000
#                                           deltas (benchmarks/output_coerce_bench.py)
#   bash benchmarks/run.sh effects ...      runs killed mid-batch left with an uncertain effect, and effect-ledger write
#                                           latency, on SQLite under 20 concurrent runs (benchmarks/effects_kill_bench.py)
#   bash benchmarks/run.sh retrieval ...    sqlite_vec query latency (p50/p95) over 10,000 384-dim chunks and insert
#                                           throughput (benchmarks/retrieval_bench.py)
#   bash benchmarks/run.sh guardrails ...   egress check_url cost per call in microseconds, next to the httpx.URL parse it
#                                           is built on, and the egress middleware's overhead on W1
#                                           (benchmarks/guardrails_bench.py)
#   bash benchmarks/run.sh capabilities ... compile_agent on 200 capabilities (a layered DAG), pydantic and JSON Schema
#                                           inputs, median ms (benchmarks/capabilities_bench.py)
#   bash benchmarks/run.sh kernel ...       the capability kernel's per-turn cost over a scripted 50-turn conversation
#                                           (facts accumulate), next to the same work as plain tool calls, on SQLite and
#                                           in memory: turns 1-10 vs 41-50, checkpoint size (benchmarks/kernel_turns_bench.py)
#   bash benchmarks/run.sh workflows ...    workflow per-step overhead next to one agent run doing the same work (no
#                                           checkpointer, memory, SQLite), validate() on 100..1000-step graphs, and a
#                                           25..200-branch fan-out (max_concurrency 8): time, peak memory, checkpoint
#                                           size (benchmarks/workflows_bench.py)
#   bash benchmarks/run.sh mcp ...          one tool call through an MCP server (stdio subprocess, streamable HTTP) next to
#                                           a native tool and the bare SDK call, µs per call, and the session's start
#                                           (benchmarks/mcp_bench.py)
#   bash benchmarks/run.sh memoize ...      memoize (miss, hit) and audit overhead per chat call over no middleware, µs, on
#                                           the in-memory and SQLite stores, and 20 concurrent identical calls -> provider
#                                           calls (benchmarks/memoize_audit_bench.py)
#   bash benchmarks/run.sh otel ...         the otel middleware on W1 and W2: spans to the SDK's in-memory exporter,
#                                           with metrics, listed with no provider at all, next to W1 alone and W1 plus
#                                           the same spans made by hand with the SDK (benchmarks/otel_bench.py)
#   bash benchmarks/run.sh budget ...       the budget middleware per chat call, µs: in-process next to a ledger shared
#                                           through the in-memory, SQLite, Redis and PostgreSQL stores (installs
#                                           PostgreSQL/Redis when missing) (benchmarks/budget_bench.py)
#   bash benchmarks/run.sh celery ...       seamkit-celery: runs/s of a 1,000-run batch with 1, 2 and 4 worker processes,
#                                           and the per-run overhead of the queue over a local Agent.run (one run at a
#                                           time, and in a batch) on a throwaway Redis (benchmarks/celery_bench.py)
# Any other first argument that is not an option (starting with -) is refused, listing the sections.
set -euo pipefail
SECTIONS="all long_run startup_tools local_model memory checkpoints sse tokens coerce effects retrieval guardrails
capabilities kernel workflows mcp memoize otel budget celery"
case "${1:-}" in
  "" | -*) ;;  # run.py and its options
  *)
    if ! printf '%s\n' $SECTIONS | grep -qxF -- "$1"; then
      echo "benchmarks/run.sh: unknown section '$1'; the sections are: $(echo $SECTIONS)" \
        "(none, or options only, runs benchmarks/run.py: W1-W3)" >&2
      exit 2
    fi
    ;;
esac
source "$(dirname "$0")/../scripts/_setup.sh"
if [ "${1:-}" = "all" ]; then
  shift
  # One section after another (never in parallel: they would time each other); a section that fails
  # is named at the end and the others still run.
  all_start=$(date +%s)
  failed=()
  sections=0
  section() { # title command...
    local title=$1 start
    shift
    sections=$((sections + 1))
    start=$(date +%s)
    printf '\n===== %s =====\n' "$title"
    if "$@"; then
      printf '(%s: %ss)\n' "$title" $(($(date +%s) - start))
    else
      echo "FAILED: $title (exit $?)"
      failed+=("$title")
    fi
  }
  echo "benchmarks/run.sh all: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
  section "W1-W3, measured as the peer harness does (run.py)" .venv/bin/python benchmarks/run.py "$@"
  section "memory per concurrent run (memory_bench.py)" .venv/bin/python benchmarks/memory_bench.py
  section "checkpoint cost per step (checkpoints.py)" bash benchmarks/run.sh checkpoints
  for bench in long_run_bench startup_tools_bench local_model_bench; do
    if [ -f "benchmarks/$bench.py" ]; then
      section "$bench.py" .venv/bin/python "benchmarks/$bench.py"
    fi
  done
  section "W2 with a request builder, 1,000 turns (long_run_bench.py --builder)" \
    .venv/bin/python benchmarks/long_run_bench.py --builder --turns 1000
  section "token estimator (tokens_bench.py)" .venv/bin/python benchmarks/tokens_bench.py
  section "streamed typed output (output_coerce_bench.py)" .venv/bin/python benchmarks/output_coerce_bench.py
  section "egress guardrails (guardrails_bench.py)" .venv/bin/python benchmarks/guardrails_bench.py
  section "otel middleware on W1/W2 (otel_bench.py)" .venv/bin/python benchmarks/otel_bench.py
  took=$(($(date +%s) - all_start))
  printf '\nbenchmarks/run.sh all: %d sections in %dm%02ds, load average now %s\n' \
    "$sections" $((took / 60)) $((took % 60)) "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
  if [ ${#failed[@]} -gt 0 ]; then
    printf 'failed: %s\n' "${failed[@]}"
    exit 1
  fi
  exit 0
fi
case "${1:-}" in
  long_run) shift; exec .venv/bin/python benchmarks/long_run_bench.py "$@" ;;
  startup_tools) shift; exec .venv/bin/python benchmarks/startup_tools_bench.py "$@" ;;
  local_model) shift; exec .venv/bin/python benchmarks/local_model_bench.py "$@" ;;
esac
if [ "${1:-}" = "memory" ]; then
  shift
  exec .venv/bin/python benchmarks/memory_bench.py "$@"
fi
if [ "${1:-}" = "celery" ]; then
  shift
  source scripts/_services.sh
  exec .venv/bin/python benchmarks/celery_bench.py "$@"
fi
if [ "${1:-}" = "budget" ]; then
  shift
  source scripts/_services.sh
  exec .venv/bin/python benchmarks/budget_bench.py "$@"
fi
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
if [ "${1:-}" = "sse" ]; then
  shift
  sse_stamp=".venv/.seamkit-bench-sse"
  sse_want="$(sha256sum benchmarks/requirements-sse.txt | cut -c1-16)"
  if [ ! -f "$sse_stamp" ] || [ "$(cat "$sse_stamp")" != "$sse_want" ]; then
    echo "seamkit bench: installing the openai SDK (benchmarks/requirements-sse.txt) into .venv" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check -r benchmarks/requirements-sse.txt
    echo "$sse_want" > "$sse_stamp"
  fi
  exec .venv/bin/python benchmarks/sse_bench.py "$@"
fi
if [ "${1:-}" = "coerce" ]; then
  shift
  exec .venv/bin/python benchmarks/output_coerce_bench.py "$@"
fi
if [ "${1:-}" = "effects" ]; then
  shift
  exec .venv/bin/python benchmarks/effects_kill_bench.py "$@"
fi
if [ "${1:-}" = "retrieval" ]; then
  shift
  exec .venv/bin/python benchmarks/retrieval_bench.py "$@"
fi
if [ "${1:-}" = "guardrails" ]; then
  shift
  exec .venv/bin/python benchmarks/guardrails_bench.py "$@"
fi
if [ "${1:-}" = "capabilities" ]; then
  shift
  exec .venv/bin/python benchmarks/capabilities_bench.py "$@"
fi
if [ "${1:-}" = "kernel" ]; then
  shift
  exec .venv/bin/python benchmarks/kernel_turns_bench.py "$@"
fi
if [ "${1:-}" = "otel" ]; then
  shift
  exec .venv/bin/python benchmarks/otel_bench.py "$@"
fi
if [ "${1:-}" = "mcp" ]; then
  shift
  exec .venv/bin/python benchmarks/mcp_bench.py "$@"
fi
if [ "${1:-}" = "memoize" ]; then
  shift
  exec .venv/bin/python benchmarks/memoize_audit_bench.py "$@"
fi
if [ "${1:-}" = "workflows" ]; then
  shift
  exec .venv/bin/python benchmarks/workflows_bench.py "$@"
fi
if [ "${1:-}" = "tokens" ]; then
  shift
  exec .venv/bin/python benchmarks/tokens_bench.py "$@"
fi
exec .venv/bin/python benchmarks/run.py "$@"
