"""A stateful GitHub-mini upstream for the effect-contract fixture, answering from memory.

Every start is fresh: two issues and one pull to begin with; the issues, comments and releases it is
asked to create. Comments honour an ``Idempotency-Key`` header (GitHub itself does not): a second
POST with a key already used answers the first comment again (201) without creating another.

Routes (owner and repo are accepted and ignored):
    GET    /repos/{o}/{r}/issues[?state=open|closed|all]  200 issues (open by default)
    POST   /repos/{o}/{r}/issues                          201 new open issue
    GET    /repos/{o}/{r}/issues/{n}                      200 issue | 404
    PATCH  /repos/{o}/{r}/issues/{n}                      200 issue (title/body/state copied) | 404
    GET    /repos/{o}/{r}/issues/{n}/comments             200 that issue's comments
    POST   /repos/{o}/{r}/issues/{n}/comments             201 {id, body} (replayed for a known key)
    DELETE /repos/{o}/{r}/issues/comments/{id}            204 | 404
    POST   /repos/{o}/{r}/releases                        201 {id, tag_name, name, body, draft}
    PATCH  /repos/{o}/{r}/releases/{id}                   200 release (name/body/draft copied) | 404
    DELETE /repos/{o}/{r}/releases/{id}                   204 | 404
    GET    /repos/{o}/{r}/releases/tags/{tag}             200 release | 404
    GET    /repos/{o}/{r}/pulls                           200 pulls
Anything else is 404 ``{"message": "Not Found"}``. With a token configured, a request whose
``Authorization`` is not exactly ``Bearer <token>`` is 401 ``{"message": "Bad credentials"}``.

``GET /__requests`` (never logged, never authorized) lists every other request, logged before it is
authorized: ``{method, path, authorized, idempotency_key?}``, so a test can prove a refused call never
reached the wire.

Run it: ``python examples/github-mini/mock_upstream.py --port 0 [--token T]`` prints
``{"url": "http://127.0.0.1:N"}`` once it is listening (on loopback only).
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["SEED_ISSUES", "SEED_PULLS", "State", "create_app", "main"]

SEED_ISSUES: tuple[dict[str, Any], ...] = (
    {"number": 2, "title": "Second issue", "state": "open", "body": "Still open."},
    {"number": 1, "title": "First issue", "state": "closed", "body": "Done."},
)
SEED_PULLS: tuple[dict[str, Any], ...] = ({"number": 3, "title": "Fix the first issue", "state": "merged"},)

_REPO = r"^/repos/[^/]+/[^/]+"
NOT_FOUND: dict[str, Any] = {"message": "Not Found"}


@dataclass
class State:
    """Everything the mock remembers. Comments keep their issue number, which answers leave out."""

    issues: list[dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(list(SEED_ISSUES)))
    comments: list[dict[str, Any]] = field(default_factory=list)
    releases: list[dict[str, Any]] = field(default_factory=list)
    next_issue: int = 3
    next_comment: int = 100
    next_release: int = 500
    requests: list[dict[str, Any]] = field(default_factory=list)
    keyed_comments: dict[str, dict[str, Any]] = field(default_factory=dict)


Handler = Callable[[State, Request, "re.Match[str]", Any], Response]


def _json(status: int, body: Any) -> Response:
    return JSONResponse(body, status_code=status)


def _no_content() -> Response:
    return Response(status_code=204)


def _find(items: list[dict[str, Any]], key: str, value: object) -> dict[str, Any] | None:
    return next((item for item in items if item[key] == value), None)


def _copy_fields(target: dict[str, Any], body: Any, keys: tuple[str, ...]) -> None:
    if isinstance(body, dict):
        for key in keys:
            if key in body:
                target[key] = body[key]


def _body(body: Any, key: str) -> Any:
    return body.get(key, "") if isinstance(body, dict) else ""


def list_issues(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    wanted = request.query_params.get("state", "open")  # GitHub lists open issues unless told otherwise
    issues = state.issues if wanted == "all" else [i for i in state.issues if i["state"] == wanted]
    return _json(200, issues)


def create_issue(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    issue = {"number": state.next_issue, "title": _body(body, "title"), "state": "open", "body": _body(body, "body")}
    state.next_issue += 1
    state.issues.append(issue)
    return _json(201, issue)


def get_issue(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    issue = _find(state.issues, "number", int(match.group(1)))
    return _json(200, issue) if issue is not None else _json(404, NOT_FOUND)


def update_issue(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    issue = _find(state.issues, "number", int(match.group(1)))
    if issue is None:
        return _json(404, NOT_FOUND)
    _copy_fields(issue, body, ("title", "body", "state"))
    return _json(200, issue)


def list_comments(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    number = int(match.group(1))
    return _json(200, [{"id": c["id"], "body": c["body"]} for c in state.comments if c["issue"] == number])


def create_comment(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    key = request.headers.get("idempotency-key")
    if key is not None and key in state.keyed_comments:
        return _json(201, state.keyed_comments[key])
    comment = {"id": state.next_comment, "body": _body(body, "body")}
    state.next_comment += 1
    state.comments.append({**comment, "issue": int(match.group(1))})
    if key is not None:
        state.keyed_comments[key] = comment
    return _json(201, comment)


def delete_comment(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    comment = _find(state.comments, "id", int(match.group(1)))
    if comment is None:
        return _json(404, NOT_FOUND)
    state.comments.remove(comment)
    return _no_content()


def create_release(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    release = {
        "id": state.next_release,
        "tag_name": _body(body, "tag_name"),
        "name": _body(body, "name"),
        "body": _body(body, "body"),
        "draft": isinstance(body, dict) and body.get("draft") is True,
    }
    state.next_release += 1
    state.releases.append(release)
    return _json(201, release)


def update_release(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    release = _find(state.releases, "id", int(match.group(1)))
    if release is None:
        return _json(404, NOT_FOUND)
    _copy_fields(release, body, ("name", "body", "draft"))
    return _json(200, release)


def delete_release(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    release = _find(state.releases, "id", int(match.group(1)))
    if release is None:
        return _json(404, NOT_FOUND)
    state.releases.remove(release)
    return _no_content()


def release_by_tag(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    release = _find(state.releases, "tag_name", match.group(1))
    return _json(200, release) if release is not None else _json(404, NOT_FOUND)


def list_pulls(state: State, request: Request, match: re.Match[str], body: Any) -> Response:
    return _json(200, list(SEED_PULLS))


ROUTES: tuple[tuple[str, re.Pattern[str], Handler], ...] = (
    ("GET", re.compile(_REPO + r"/issues$"), list_issues),
    ("POST", re.compile(_REPO + r"/issues$"), create_issue),
    ("GET", re.compile(_REPO + r"/issues/(\d+)$"), get_issue),
    ("PATCH", re.compile(_REPO + r"/issues/(\d+)$"), update_issue),
    ("GET", re.compile(_REPO + r"/issues/(\d+)/comments$"), list_comments),
    ("POST", re.compile(_REPO + r"/issues/(\d+)/comments$"), create_comment),
    ("DELETE", re.compile(_REPO + r"/issues/comments/(\d+)$"), delete_comment),
    ("POST", re.compile(_REPO + r"/releases$"), create_release),
    ("PATCH", re.compile(_REPO + r"/releases/(\d+)$"), update_release),
    ("DELETE", re.compile(_REPO + r"/releases/(\d+)$"), delete_release),
    ("GET", re.compile(_REPO + r"/releases/tags/([^/]+)$"), release_by_tag),
    ("GET", re.compile(_REPO + r"/pulls$"), list_pulls),
)


def create_app(token: str | None = None, state: State | None = None) -> tuple[Starlette, State]:
    """The mock as an ASGI app and the state it answers from (fresh unless ``state`` is given).

    Args:
        token: When set, every request but ``/__requests`` must carry ``Authorization: Bearer <token>``.
        state: The state to serve, for a test that seeds it; a fresh one by default.
    """
    memory = state if state is not None else State()

    async def requests_seen(request: Request) -> Response:
        return _json(200, memory.requests)

    async def dispatch(request: Request) -> Response:
        authorized = token is None or request.headers.get("authorization") == f"Bearer {token}"
        key = request.headers.get("idempotency-key")
        entry: dict[str, Any] = {"method": request.method, "path": request.url.path, "authorized": authorized}
        if key is not None:
            entry["idempotency_key"] = key
        if "traceparent" in request.headers:  # only a bundle that propagates its trace sends one
            entry["traceparent"] = request.headers["traceparent"]
        memory.requests.append(entry)
        if not authorized:
            return _json(401, {"message": "Bad credentials"})
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            return _json(400, {"message": "Problems parsing JSON"})
        for method, pattern, handler in ROUTES:
            match = pattern.match(request.url.path)
            if match is not None and method == request.method:
                return handler(memory, request, match, body)
        return _json(404, NOT_FOUND)

    methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    app = Starlette(
        routes=[
            Route("/__requests", requests_seen, methods=["GET"]),
            Route("/{path:path}", dispatch, methods=methods),
        ]
    )
    return app, memory


def main(argv: list[str] | None = None) -> int:
    """Serve the mock on 127.0.0.1; print ``{"url": ...}`` on stdout once it is listening."""
    parser = argparse.ArgumentParser(description="The github-mini example's mock upstream.")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--token", default=None, help="require Authorization: Bearer <token>")
    args = parser.parse_args(argv)

    import uvicorn

    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on sockets whose proto says TCP (else a ~40 ms stall).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)  # connections queue from now on, so the printed URL is usable at once
    print(json.dumps({"url": f"http://127.0.0.1:{sock.getsockname()[1]}"}), flush=True)
    app, _ = create_app(token=args.token)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
