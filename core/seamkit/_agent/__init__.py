"""Agents: the ``Agent`` value, its prompt and output type, and the loop that drives it."""
