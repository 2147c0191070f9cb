"""github-mini through the fleet's REST route, ``POST /call/<tool>`` (ADR-0030 §8, original-gateway §2.7, §4.9).

Plain httpx against the real gateway process: the ``Idempotency-Key`` header is the ledger id, the effect
report rides in ``X-Anvil-Effect`` (printable ASCII), refusals map to their HTTP statuses, and the route
shares ``/mcp``'s authorization, grants and audit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from tests.e2e.conftest import READ_GRANTS, Fleet
from tests.e2e.support import OWNER_REPO, rest_call

pytestmark = pytest.mark.anyio

TIMEOUT_S = 30


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
        yield client


async def test_a_comment_posted_with_an_idempotency_key_is_replayed_then_undone(
    fleet: Fleet, http: httpx.AsyncClient
) -> None:
    token = fleet.token()
    comment = {**OWNER_REPO, "issue_number": 2, "body": "Ship it ✓"}
    key = "01JLEDGERREST0000000000001"
    with anyio.fail_after(TIMEOUT_S):
        created = await rest_call(http, fleet.base, "github__github_create_comment", comment, token=token, key=key)
        again = await rest_call(http, fleet.base, "github__github_create_comment", comment, token=token, key=key)
        assert created.status == 200, created.body
        assert created.body == {"id": 100, "body": "Ship it ✓"}
        assert created.effect is not None
        assert (created.effect["class"], created.effect["idempotency_key"]) == ("reversible", key)
        assert created.effect["deadline_ms"] is None
        undo = created.effect["undo"]
        assert undo["tool"] == "github__github_delete_comment"
        assert undo["arguments"] == {"owner": "octo", "repo": "hello", "comment_id": 100}
        assert [r.get("idempotency_key") for r in fleet.github_requests("POST", "/comments")] == [key]
        assert (again.status, again.body) == (200, created.body)
        assert len(fleet.github.comments) == 1
        undone = await rest_call(http, fleet.base, undo["tool"], {**undo["arguments"], "confirm": True}, token=token)
    assert undone.status == 200, undone.body
    assert undone.effect is not None
    assert (undone.effect["class"], undone.effect["undo"]) == ("irreversible", None)
    assert fleet.github.comments == []
    assert created.headers["content-type"].startswith("application/json")
    assert created.headers["cache-control"] == "no-store"


async def test_the_effect_header_is_printable_ascii_that_parses_back_to_non_ascii_arguments(
    fleet: Fleet, http: httpx.AsyncClient
) -> None:
    comment = {"owner": "øcto", "repo": "héllo", "issue_number": 2, "body": "ça marche"}
    with anyio.fail_after(TIMEOUT_S):
        answer = await rest_call(http, fleet.base, "github__github_create_comment", comment, token=fleet.token())
    assert answer.status == 200, answer.body
    assert answer.raw_effect is not None
    assert answer.raw_effect.isascii() and answer.raw_effect.isprintable()
    assert answer.effect is not None
    assert answer.effect["undo"]["arguments"]["owner"] == "øcto"
    assert answer.effect["undo"]["arguments"]["repo"] == "héllo"


async def test_a_read_grant_is_refused_a_delete_with_403_and_the_effect_header(
    fleet: Fleet, http: httpx.AsyncClient
) -> None:
    arguments = {**OWNER_REPO, "comment_id": 100, "confirm": True}
    with anyio.fail_after(TIMEOUT_S):
        answer = await rest_call(
            http, fleet.base, "github__github_delete_comment", arguments, token=fleet.token(READ_GRANTS)
        )
    assert answer.status == 403
    assert answer.body["error"]["code"] == "policy_denied"
    assert answer.body["error"]["details"]["code"] == "policy/grant_denied"
    assert answer.effect is not None
    assert (answer.effect["class"], answer.effect["undo"]) == ("irreversible", None)
    assert fleet.github_requests() == []
    assert [line["error_code"] for line in fleet.audit()] == ["policy_denied"]


async def test_a_release_staged_over_rest_is_promoted_by_its_promote_tool(
    fleet: Fleet, http: httpx.AsyncClient
) -> None:
    token = fleet.token()
    release = {**OWNER_REPO, "tag_name": "v2.0.0", "name": "Two", "confirm": True}
    with anyio.fail_after(TIMEOUT_S):
        staged = await rest_call(
            http, fleet.base, "github__github_create_release", release, token=token, key="e2e-rest-stage", stage=True
        )
        assert staged.status == 200, staged.body
        assert staged.body["draft"] is True
        assert [r["draft"] for r in fleet.github.releases] == [True]
        assert staged.effect is not None
        promote = staged.effect["staged"]["promote"]
        assert promote["tool"] == "github__github_update_release"
        promoted = await rest_call(
            http, fleet.base, promote["tool"], {**promote["arguments"], "confirm": True}, token=token
        )
    assert promoted.status == 200, promoted.body
    assert promoted.body["draft"] is False
    assert [r["draft"] for r in fleet.github.releases] == [False]
    lines = fleet.audit()
    assert [(line["operation"], line["staged_for"]) for line in lines] == [
        ("github.releases.create", "github.releases.create"),
        ("github.releases.update", None),
    ]


async def test_staging_a_comment_over_rest_is_422_and_sends_nothing(fleet: Fleet, http: httpx.AsyncClient) -> None:
    comment = {**OWNER_REPO, "issue_number": 2, "body": "draft?"}
    with anyio.fail_after(TIMEOUT_S):
        answer = await rest_call(
            http, fleet.base, "github__github_create_comment", comment, token=fleet.token(), stage=True
        )
    assert answer.status == 422
    assert (answer.body["error"]["code"], answer.body["error"]["details"]["code"]) == (
        "unsupported_operation",
        "effect/no_draft_form",
    )
    assert fleet.github_requests() == []


async def test_a_read_over_rest_answers_the_data_with_a_read_report(fleet: Fleet, http: httpx.AsyncClient) -> None:
    with anyio.fail_after(TIMEOUT_S):
        answer = await rest_call(
            http, fleet.base, "github__github_list_issue", OWNER_REPO, token=fleet.token(READ_GRANTS)
        )
    assert answer.status == 200
    assert [issue["number"] for issue in answer.body] == [2]
    assert answer.effect is not None
    assert (answer.effect["class"], answer.effect["undo"], answer.effect["idempotency_key"]) == ("read", None, None)


async def test_malformed_requests_are_refused_with_their_statuses(fleet: Fleet, http: httpx.AsyncClient) -> None:
    token = fleet.token()
    with anyio.fail_after(TIMEOUT_S):
        unknown = await rest_call(http, fleet.base, "github__nope", {}, token=token)
        not_an_object = await rest_call(http, fleet.base, "github__github_list_issue", token=token, body="[1]")
        bad_stage = await rest_call(
            http, fleet.base, "github__github_list_issue", token=token, body={"arguments": OWNER_REPO, "stage": "yes"}
        )
        bad_argument = await rest_call(http, fleet.base, "github__github_list_issue", {"owner": 1}, token=token)
        anonymous = await rest_call(http, fleet.base, "github__github_list_issue", OWNER_REPO)
    assert unknown.status == 404
    assert (not_an_object.status, bad_stage.status) == (400, 400)
    assert (bad_argument.status, bad_argument.body["error"]["code"]) == (400, "validation_error")
    assert anonymous.status == 401
    assert fleet.github_requests() == []


async def test_the_listener_probes_report_both_bundles_a_ready_ledger_and_call_metrics(
    fleet: Fleet, http: httpx.AsyncClient
) -> None:
    with anyio.fail_after(TIMEOUT_S):
        listed = await rest_call(http, fleet.base, "github__github_list_issue", OWNER_REPO, token=fleet.token())
        health = await http.get(f"{fleet.base}/healthz")
        ready = await http.get(f"{fleet.base}/readyz")
        metrics = await http.get(f"{fleet.base}/metrics")
    assert listed.status == 200
    assert health.status_code == 200
    body = health.json()
    assert {k: v for k, v in body.items() if k != "artifactHashes"} == {
        "status": "ok",
        "service": ["github", "payments"],
        "fleet": True,
        "bundles": 2,
    }
    assert [len(h) for h in body["artifactHashes"]] == [64, 64]
    assert (ready.status_code, ready.json()["ready"]) == (200, True)
    assert metrics.status_code == 200
    assert 'tool="github__github_list_issue"' in metrics.text
