"""``serve_http`` serves with uvicorn's server alone: its command line and reloader load only when asked for."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

SERVE = textwrap.dedent(
    """
    import json, socket, sys

    import anyio
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from anvil.serve.mcp.http import listen, serve_http

    async def ok(request):
        return PlainTextResponse("ok")

    def get(port):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"GET /ok HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n")
            return b"".join(iter(lambda: conn.recv(4096), b"")).split(b"\\r\\n", 1)[0].decode()

    async def main():
        sock = listen("127.0.0.1", 0)
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: serve_http(Starlette(routes=[Route("/ok", ok)]), sock=sock))
            status = await anyio.to_thread.run_sync(get, sock.getsockname()[1])
            serving = sorted(name for name in ("click", "multiprocessing", "uvicorn.main") if name in sys.modules)
            import uvicorn

            asked = [callable(uvicorn.run), uvicorn.Config.__module__, uvicorn.Server.__module__]
            group.cancel_scope.cancel()
        after = sorted(name for name in ("click", "uvicorn.main") if name in sys.modules)
        print(json.dumps({"status": status, "serving": serving, "asked": asked, "after": after}))

    anyio.run(main)
    """
)


def test_serving_loads_neither_uvicorns_command_line_nor_its_reloader_until_the_package_is_asked_for_them() -> None:
    shown = subprocess.run(
        [sys.executable, "-c", SERVE],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")},
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    found = json.loads(shown.stdout.strip().splitlines()[-1])
    assert found["status"] == "HTTP/1.1 200 OK"
    assert found["serving"] == []
    assert found["asked"] == [True, "uvicorn.config", "uvicorn.server"]
    assert found["after"] == ["click", "uvicorn.main"]
