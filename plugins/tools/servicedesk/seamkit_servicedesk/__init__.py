"""seamkit-servicedesk: a service-request desk as three capabilities, ``search_services``,
``submit_request`` and ``request_status`` (see :mod:`seamkit_servicedesk.capabilities`).

Importing this package imports nothing else; the capabilities are built through the plugin registry
(``capabilities: [{use: search_services}, ...]`` in YAML) or directly with the factories in
:mod:`seamkit_servicedesk.capabilities`.
"""

__version__ = "0.1.0"
