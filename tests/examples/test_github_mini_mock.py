"""The github-mini mock upstream: fresh state, every route and status, idempotent comments, the token."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml
from starlette.testclient import TestClient

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "github-mini"
REPO = "/repos/octo/hello"


def load_mock() -> ModuleType:
    spec = importlib.util.spec_from_file_location("github_mini_mock_upstream", EXAMPLE / "mock_upstream.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through the module registry
    spec.loader.exec_module(module)
    return module


mock = load_mock()


@pytest.fixture
def served() -> Iterator[tuple[TestClient, Any]]:
    app, state = mock.create_app()
    with TestClient(app) as client:
        yield client, state


def test_every_start_begins_from_the_same_seed(served: tuple[TestClient, Any]) -> None:
    client, state = served
    client.post(f"{REPO}/issues", json={"title": "Third"})
    _, fresh = mock.create_app()
    assert [issue["number"] for issue in fresh.issues] == [2, 1]
    assert (fresh.comments, fresh.releases) == ([], [])
    assert (fresh.next_issue, fresh.next_comment, fresh.next_release) == (3, 100, 500)
    assert [issue["number"] for issue in state.issues] == [2, 1, 3]


def test_issues_are_listed_filtered_created_read_and_updated(served: tuple[TestClient, Any]) -> None:
    client, _ = served
    assert [i["number"] for i in client.get(f"{REPO}/issues").json()] == [2]  # open by default, as GitHub does
    assert [i["number"] for i in client.get(f"{REPO}/issues", params={"state": "closed"}).json()] == [1]
    assert [i["number"] for i in client.get(f"{REPO}/issues", params={"state": "all"}).json()] == [2, 1]
    created = client.post(f"{REPO}/issues", json={"title": "New"})
    assert created.status_code == 201
    assert created.json() == {"number": 3, "title": "New", "state": "open", "body": ""}
    assert client.get(f"{REPO}/issues/3").json()["title"] == "New"
    closed = client.patch(f"{REPO}/issues/3", json={"state": "closed", "ignored": 1})
    assert (closed.status_code, closed.json()["state"]) == (200, "closed")
    assert client.get(f"{REPO}/issues/9").status_code == 404
    assert client.patch(f"{REPO}/issues/9", json={}).json() == {"message": "Not Found"}


def test_comments_are_created_listed_per_issue_and_deleted(served: tuple[TestClient, Any]) -> None:
    client, state = served
    first = client.post(f"{REPO}/issues/2/comments", json={"body": "Looks good ✓"})
    assert (first.status_code, first.json()) == (201, {"id": 100, "body": "Looks good ✓"})
    client.post(f"{REPO}/issues/1/comments", json={"body": "Other issue"})
    assert client.get(f"{REPO}/issues/2/comments").json() == [{"id": 100, "body": "Looks good ✓"}]
    deleted = client.delete(f"{REPO}/issues/comments/100")
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert client.delete(f"{REPO}/issues/comments/100").status_code == 404
    assert [c["id"] for c in state.comments] == [101]


def test_a_repeated_idempotency_key_answers_the_first_comment_without_creating(
    served: tuple[TestClient, Any],
) -> None:
    client, state = served
    headers = {"Idempotency-Key": "01JLEDGER0000000000000001"}
    first = client.post(f"{REPO}/issues/2/comments", json={"body": "once"}, headers=headers)
    again = client.post(f"{REPO}/issues/2/comments", json={"body": "twice"}, headers=headers)
    assert (again.status_code, again.json()) == (201, first.json())
    assert len(state.comments) == 1
    other = client.post(f"{REPO}/issues/2/comments", json={"body": "new key"}, headers={"Idempotency-Key": "k-2"})
    assert other.json()["id"] == 101


def test_releases_are_drafted_promoted_found_by_tag_and_deleted(served: tuple[TestClient, Any]) -> None:
    client, _ = served
    draft = client.post(f"{REPO}/releases", json={"tag_name": "v1", "draft": True})
    assert (draft.status_code, draft.json()) == (
        201,
        {"id": 500, "tag_name": "v1", "name": "", "body": "", "draft": True},
    )
    assert client.post(f"{REPO}/releases", json={"tag_name": "v2", "draft": "yes"}).json()["draft"] is False
    promoted = client.patch(f"{REPO}/releases/500", json={"draft": False, "name": "One"})
    assert (promoted.status_code, promoted.json()["draft"], promoted.json()["name"]) == (200, False, "One")
    assert client.get(f"{REPO}/releases/tags/v1").json()["id"] == 500
    assert client.get(f"{REPO}/releases/tags/v9").status_code == 404
    assert client.delete(f"{REPO}/releases/500").status_code == 204
    assert client.patch(f"{REPO}/releases/500", json={}).status_code == 404
    assert client.delete(f"{REPO}/releases/500").status_code == 404


def test_pulls_are_constant_and_unknown_routes_are_not_found(served: tuple[TestClient, Any]) -> None:
    client, _ = served
    assert client.get(f"{REPO}/pulls").json() == [{"number": 3, "title": "Fix the first issue", "state": "merged"}]
    assert client.get("/nope").status_code == 404
    assert client.put(f"{REPO}/issues").json() == {"message": "Not Found"}
    assert client.delete(f"{REPO}/issues/comments/abc").status_code == 404


def test_a_malformed_json_body_is_a_bad_request(served: tuple[TestClient, Any]) -> None:
    client, _ = served
    response = client.post(f"{REPO}/issues", content=b"{", headers={"content-type": "application/json"})
    assert response.status_code == 400


def test_requests_are_logged_before_authorization_and_the_log_is_never_logged() -> None:
    app, _ = mock.create_app(token="t-1")
    with TestClient(app) as client:
        refused = client.get(f"{REPO}/issues", params={"state": "open"})
        assert (refused.status_code, refused.json()) == (401, {"message": "Bad credentials"})
        assert client.get(f"{REPO}/issues", headers={"Authorization": "bearer t-1"}).status_code == 401
        allowed = client.post(
            f"{REPO}/issues/2/comments",
            json={"body": "hi"},
            headers={"Authorization": "Bearer t-1", "Idempotency-Key": "k-1"},
        )
        assert allowed.status_code == 201
        log = client.get("/__requests")
        assert client.get("/__requests").json() == log.json()
    assert log.json() == [
        {"method": "GET", "path": f"{REPO}/issues", "authorized": False},
        {"method": "GET", "path": f"{REPO}/issues", "authorized": False},
        {"method": "POST", "path": f"{REPO}/issues/2/comments", "authorized": True, "idempotency_key": "k-1"},
    ]


def test_the_command_serves_on_loopback_and_prints_its_url() -> None:
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE / "mock_upstream.py"), "--port", "0", "--token", "t-2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = json.loads(process.stdout.readline())["url"]
        assert url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=url, timeout=10) as client:
            response = client.get(f"{REPO}/pulls", headers={"Authorization": "Bearer t-2"})
            assert response.status_code == 200
            assert client.get("/__requests").json() == [{"method": "GET", "path": f"{REPO}/pulls", "authorized": True}]
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_the_spec_and_manifest_describe_the_same_twelve_operations() -> None:
    spec = yaml.safe_load((EXAMPLE / "openapi.yaml").read_text(encoding="utf-8"))
    manifest = yaml.safe_load((EXAMPLE / "anvil.yaml").read_text(encoding="utf-8"))
    operation_ids = {op["operationId"] for item in spec["paths"].values() for op in item.values()}
    assert len(operation_ids) == 12
    assert set(manifest["operations"]) == operation_ids
    assert {entry["state"] for entry in manifest["operations"].values()} == {"approved"}
    assert manifest["service"] == {"name": "github", "display_name": "GitHub Mini", "owner": "branchyard-fixtures"}
    classes = {key: entry["effect"]["class"] for key, entry in manifest["operations"].items() if "effect" in entry}
    assert classes == {
        "createIssue": "compensable",
        "createIssueComment": "reversible",
        "createRelease": "irreversible",
    }
