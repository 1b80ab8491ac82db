"""seamkit-guardrails-web: safe web egress for agents (see README.md)."""
