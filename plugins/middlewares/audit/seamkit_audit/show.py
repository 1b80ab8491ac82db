"""The body of ``seamkit runs audit``: open the store, read the records, print them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["format_record", "main"]


def _audit_slot(composition: Any) -> tuple[Any, str]:
    """The ``store`` slot (or ``None``) and the namespace of the entry agent's ``audit`` middleware."""
    for ref in composition.agent.middlewares:
        if getattr(ref, "use", None) == "audit":
            cfg = ref.config
            if cfg is None:
                from seamkit_audit.config import AuditConfig

                cfg = AuditConfig.model_validate(ref.params)
            return cfg.store, cfg.namespace
    return None, "audit"


def _open_store(args: argparse.Namespace) -> tuple[Any, str]:
    from seamkit.composition import build_store
    from seamkit.plugin import DEFAULT_DB, UsageError
    from seamkit.plugin import load_for_command as _load

    composition, registry = _load(args.agent)  # ConfigError: exit 2; secrets masked from here on
    namespace = "audit"
    if composition is not None:
        slot, namespace = _audit_slot(composition)
        if slot is not None:
            from seamkit.plugin import build_nested

            return build_nested("store", slot, at="agent.middlewares.audit.store", registry=registry), namespace
    elif not Path(DEFAULT_DB).exists():
        raise UsageError(f"no runs here: {DEFAULT_DB} does not exist (run this where you ran 'seamkit run', "
                         "or pass --agent FILE to use that composition's store)")
    store = build_store(composition, registry=registry)
    if store is None:
        raise UsageError("no store to read audit records from: the composition has 'checkpoints: null' and its "
                         "audit middleware no 'store:'")
    return store, namespace


def _cell(v: Any) -> str:
    return "-" if v is None else str(v)


def format_record(i: int, r: Any) -> str:
    """One record as one line: number, time, kind, what ran, outcome, duration, tokens, cost, digest."""
    if not isinstance(r, dict):
        return f"{i:>3}  (a record this version cannot read: {type(r).__name__})"
    what = (f"{_cell(r.get('provider'))}:{_cell(r.get('model'))}" if r.get("kind") == "chat"
            else f"{_cell(r.get('tool'))} ({_cell(r.get('call_id'))})")
    outcome = r.get("outcome", "?") + (f" {r['error']}" if r.get("error") else "")
    dur = r.get("duration_s")
    parts = [f"{i:>3}", _cell(r.get("at")), f"step {_cell(r.get('step'))}", f"{_cell(r.get('kind')):<4}", what,
             outcome, f"{dur:.3f}s" if isinstance(dur, int | float) else "-"]
    if r.get("kind") == "chat":
        parts.append(f"tokens {_cell(r.get('input_tokens'))}/{_cell(r.get('output_tokens'))}")
        cost = r.get("cost_usd")
        parts.append(f"${cost} ({r.get('cost_source')})" if cost is not None else "cost unknown")
        if r.get("cache_hit"):
            parts.append("cache hit")
    digest = r.get("arguments_sha256")
    alg = "hmac" if r.get("digest") == "hmac-sha256" else "sha256"
    parts.append(f"args {alg}:{digest[:16]}" if isinstance(digest, str) else "args -")
    return "  ".join(parts)


def main(args: argparse.Namespace) -> int:
    """Print ``args.run_id``'s audit records; exit 0, or 2 (a usage error) when it has none."""
    from seamkit.plugin import UsageError, no_run_text

    from seamkit_audit.middleware import read_records

    store, namespace = _open_store(args)

    async def read() -> list[Any]:
        try:
            return await read_records(store, args.run_id, tenant=args.tenant, namespace=namespace)
        finally:
            await store.aclose()

    records = asyncio.run(read())
    if not records:
        raise UsageError(no_run_text(args.run_id, args.agent, "audit record of run")
                         + f" (tenant {args.tenant!r}; pass --tenant NAME for another)")
    if args.json:
        sys.stdout.write(json.dumps(records, indent=2, default=str) + "\n")
    else:
        sys.stdout.write(f"run {args.run_id}: {len(records)} audit record{'s' if len(records) != 1 else ''}\n")
        for i, r in enumerate(records, 1):
            sys.stdout.write(format_record(i, r) + "\n")
    return 0
