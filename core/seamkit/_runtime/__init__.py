"""Run context, invoker and concurrency primitives."""
