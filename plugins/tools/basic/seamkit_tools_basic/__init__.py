"""seamkit-tools-basic: the ``calculator``, ``clock``, ``read_file`` and ``write_file`` tools.

Importing this package imports nothing else; the tools are built through the plugin registry
(``use: calculator`` in YAML) or directly with the factories in
:mod:`seamkit_tools_basic.calculator`, :mod:`seamkit_tools_basic.clock` and
:mod:`seamkit_tools_basic.files`.
"""

__version__ = "0.1.0"
