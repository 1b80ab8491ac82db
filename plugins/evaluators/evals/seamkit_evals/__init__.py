"""seamkit-evals: built-in evaluators (:mod:`seamkit_evals.checks`, :mod:`seamkit_evals.judge`)
and the ``seamkit eval`` runner. Importing this package is cheap."""

from __future__ import annotations
