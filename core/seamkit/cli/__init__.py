"""The seamkit command line."""
