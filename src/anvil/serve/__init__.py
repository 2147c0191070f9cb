"""serve stage: an AIR document served as MCP tools, over stdio and Streamable HTTP (ADR-0030 §4-7).

Three rooms (imported directly; no package here imports its modules, so the transport-free parts
never pay for the MCP SDK):

* :mod:`anvil.serve.mcp` - the MCP wire, the bottom room: the hot path (:mod:`~anvil.serve.mcp.hotpath`)
  and its tables copied from the SDK (:mod:`~anvil.serve.mcp.bootstrap`), the SDK loaded in the
  background (:mod:`~anvil.serve.mcp.deferred`, :mod:`~anvil.serve.mcp.server`,
  :mod:`~anvil.serve.mcp.sdkwire`), the Starlette app (:mod:`~anvil.serve.mcp.http`) and its inbound
  connection limits (:mod:`~anvil.serve.mcp.limits`), the
  ``tools/list`` projection (:mod:`~anvil.serve.mcp.listing`), a call's answer and its wire form
  (:mod:`~anvil.serve.mcp.results`), argument validators (:mod:`~anvil.serve.mcp.validation`) and the
  :class:`~anvil.serve.mcp.provider.ToolProvider` protocol;
* :mod:`anvil.serve.auth` - inbound identity above it: static bearer principals, JWTs against a JWKS,
  grant decisions, connector names and the auth middleware;
* this package - the gateway on top: :class:`~anvil.serve.gateway.Gateway` (the tool table and
  ``call``), :mod:`~anvil.serve.controls` (``_meta.idempotency_key`` / ``_meta.stage``),
  :mod:`~anvil.serve.report` (the ``_meta.effect`` report), :mod:`~anvil.serve.fleet` (several
  bundles behind one listener), :mod:`~anvil.serve.rest` (``POST /call/<tool>``),
  :mod:`~anvil.serve.catalog` (``GET /openapi``, the operations catalog),
  :mod:`~anvil.serve.listener` (the fleet's Starlette app), :mod:`~anvil.serve.health` (``/readyz``)
  and :mod:`~anvil.serve.metrics` (Prometheus).
"""

__all__: list[str] = []
