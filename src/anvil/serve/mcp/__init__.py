"""The MCP wire: what an MCP client sees, with or without the SDK loaded.

The hot path (:mod:`.hotpath`) answers the hot verbs from tables copied from the SDK
(:mod:`.bootstrap`); the SDK itself loads in the background (:mod:`.deferred`) and serves everything
else (:mod:`.server`, :mod:`.sdkwire`), over the Starlette app of :mod:`.http`. The tool listing
(:mod:`.listing`), a call's answer and its wire form (:mod:`.results`), argument validators
(:mod:`.validation`) and the :class:`~.provider.ToolProvider` protocol live here too.

The bottom of ``serve``: imports nothing from :mod:`anvil.serve.auth` or the gateway.
"""
