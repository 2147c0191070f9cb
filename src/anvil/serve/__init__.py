"""serve stage: an AIR document served as MCP tools, over stdio and Streamable HTTP (ADR-0030 §4-7).

Modules (imported directly; this package imports nothing, so the transport-free parts never pay for
the MCP SDK):

* :mod:`anvil.serve.gateway` - :class:`~anvil.serve.gateway.Gateway`: the tool table and ``call``;
* :mod:`anvil.serve.mcp.listing` - the ``tools/list`` projection with the declared effect contract;
* :mod:`anvil.serve.controls` - ``_meta.idempotency_key`` / ``_meta.stage`` and key forwarding;
* :mod:`anvil.serve.mcp.validation` - argument validators compiled once per tool;
* :mod:`anvil.serve.report` - the ``_meta.effect`` report and the fleet's tool renaming;
* :mod:`anvil.serve.mcp.results` - a call's answer and its ``CallToolResult`` wire form;
* :mod:`anvil.serve.mcp.server` - the MCP low-level server over a tool provider, and stdio;
* :mod:`anvil.serve.mcp.http` - the Starlette app factory (``/mcp``, ``/healthz``) and uvicorn;
* :mod:`anvil.serve.mcp.hotpath` - ``tools/call``, ``tools/list`` and the plain handshake over stateless
  JSON HTTP, answered without the SDK (byte for byte what the SDK sends);
* :mod:`anvil.serve.mcp.bootstrap` - the SDK's answers as tables (copied from it) and their encoders;
* :mod:`anvil.serve.mcp.deferred` - the SDK's ``/mcp`` app, loaded in a background thread;
* :mod:`anvil.serve.mcp.sdkwire` - the SDK's own answers, the tables' oracle (imports the SDK);
* :mod:`anvil.serve.mcp.provider` - the :class:`~anvil.serve.mcp.provider.ToolProvider` protocol (SDK-free);
* :mod:`anvil.serve.fleet` - several bundles behind one listener: discovery, prefixes, per-caller compositions;
* :mod:`anvil.serve.listener` - the fleet's Starlette app (``/mcp``, ``/call/<tool>``, health, metrics);
* :mod:`anvil.serve.rest` - ``POST /call/<tool>`` and its status table;
* :mod:`anvil.serve.health` / :mod:`anvil.serve.metrics` - ``/readyz`` probes and Prometheus metrics;
* :mod:`anvil.serve.auth.middleware`, :mod:`anvil.serve.auth.tokens`, :mod:`anvil.serve.auth.jwks`,
  :mod:`anvil.serve.auth.principals` - inbound auth (none, static bearer principals, JWT against a JWKS);
* :mod:`anvil.serve.auth.grants` / :mod:`anvil.serve.auth.naming` - grant decisions and connector names.
"""

__all__: list[str] = []
