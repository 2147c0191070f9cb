"""serve stage: an AIR document served as MCP tools, over stdio and Streamable HTTP (ADR-0030 §4-7).

Modules (imported directly; this package imports nothing, so the transport-free parts never pay for
the MCP SDK):

* :mod:`anvil.serve.gateway` - :class:`~anvil.serve.gateway.Gateway`: the tool table and ``call``;
* :mod:`anvil.serve.listing` - the ``tools/list`` projection with the declared effect contract;
* :mod:`anvil.serve.controls` - ``_meta.idempotency_key`` / ``_meta.stage`` and key forwarding;
* :mod:`anvil.serve.validation` - argument validators compiled once per tool;
* :mod:`anvil.serve.report` - the ``_meta.effect`` report and the fleet's tool renaming;
* :mod:`anvil.serve.results` - a call's answer and its ``CallToolResult`` wire form;
* :mod:`anvil.serve.server` - the MCP low-level server over a tool provider, and stdio;
* :mod:`anvil.serve.http` - the Starlette app factory (``/mcp``, ``/healthz``) and uvicorn;
* :mod:`anvil.serve.hotpath` - ``tools/call``, ``tools/list`` and the plain handshake over stateless
  JSON HTTP, answered without the SDK (byte for byte what the SDK sends);
* :mod:`anvil.serve.bootstrap` - the SDK's answers as tables (copied from it) and their encoders;
* :mod:`anvil.serve.deferred` - the SDK's ``/mcp`` app, loaded in a background thread;
* :mod:`anvil.serve.sdkwire` - the SDK's own answers, the tables' oracle (imports the SDK);
* :mod:`anvil.serve.provider` - the :class:`~anvil.serve.provider.ToolProvider` protocol (SDK-free);
* :mod:`anvil.serve.fleet` - several bundles behind one listener: discovery, prefixes, per-caller compositions;
* :mod:`anvil.serve.listener` - the fleet's Starlette app (``/mcp``, ``/call/<tool>``, health, metrics);
* :mod:`anvil.serve.rest` - ``POST /call/<tool>`` and its status table;
* :mod:`anvil.serve.health` / :mod:`anvil.serve.metrics` - ``/readyz`` probes and Prometheus metrics;
* :mod:`anvil.serve.auth_middleware`, :mod:`anvil.serve.tokens`, :mod:`anvil.serve.jwks`,
  :mod:`anvil.serve.principals` - inbound auth (none, static bearer principals, JWT against a JWKS);
* :mod:`anvil.serve.grants` / :mod:`anvil.serve.naming` - grant decisions and connector names.
"""

__all__: list[str] = []
