"""``python -m seamkit``: the seamkit command line (same as the ``seamkit`` script)."""

from seamkit._cli.main import main

raise SystemExit(main())
