"""seamkit-guardrails-content: untrusted tool-output framing, redaction and moderation (see README.md)."""
