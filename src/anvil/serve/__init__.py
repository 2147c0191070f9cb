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
* :mod:`anvil.serve.http` - the Starlette app factory (``/mcp``, ``/healthz``) and uvicorn.
"""

__all__: list[str] = []
