"""The pipeline on the shapes real APIs use (fixtures/shapes.yaml, each shape a few lines of a corpus spec).

``anvil init --approve all --propose-effects`` then ``anvil compile`` make the bundle; the compiled
schemas name only whole components, the mock answers each shape as the API would, and selftest,
conformance and simulate pass everything they can run on it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from anvil.air.values import ValueGenerator
from anvil.bundle.read import read_bundle
from anvil.proof.conformance.lane import conformance
from anvil.proof.mock import MockApi, create_mock_app
from anvil.proof.mock.fit import AnswerFitter
from anvil.proof.mock.routes import route_table
from anvil.proof.mock.schema import SchemaSet, Validator, ValueMaker
from anvil.proof.scope import LaneScope
from anvil.proof.selftest.lane import SelftestOptions, run_selftest
from anvil.proof.simulate.lane import simulate

_WHOLE_COMPONENT = re.compile(r"#/components/schemas/[^/]+")


def _environ() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}


@pytest.fixture
async def mock(shapes: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_mock_app(MockApi(read_bundle(shapes)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
        yield client


async def _widget(mock: httpx.AsyncClient, name: str = "Sprocket") -> dict[str, object]:
    created = await mock.post("/widgets", json={"widget": {"id": "W1", "name": name, "colour": "red"}})
    assert created.status_code == 201, created.text
    widget = created.json()["widget"]
    assert isinstance(widget, dict)
    return widget


# --- the compiled bundle ------------------------------------------------------------------------------


def test_every_compiled_reference_names_a_whole_component_so_the_widgets_answer_can_validate(shapes: Path) -> None:
    doc = read_bundle(shapes)
    text = json.dumps([doc.schemas, [op.output.schema for op in doc.operations]])
    refs = re.findall(r'"\$ref": "([^"]+)"', text)
    assert refs and all(_WHOLE_COMPONENT.fullmatch(ref) for ref in refs), sorted(set(refs))
    get = doc.operation("shapes.widgets.get.by_id")
    assert get is not None
    answer = ValueGenerator(doc.schemas).make(get.output.schema, direction="response", published=True)
    assert isinstance(answer, dict) and "id" in answer["widget"]
    assert not [d for d in doc.diagnostics if d.get("code") == "effect/path_unverified"]


def test_init_proposes_the_inverse_of_an_item_answered_as_one_of_two_shapes(shapes: Path) -> None:
    create = read_bundle(shapes).operation("shapes.actions.create")
    assert create is not None and create.effect.inverse is not None
    assert dict(create.effect.inverse.arguments) == {"id": "response.action.id"}


def test_two_path_families_ending_in_the_same_word_are_different_kinds(shapes: Path) -> None:
    doc = read_bundle(shapes)
    kinds = {route.op.id: route.kind for route in route_table(doc, SchemaSet(doc.schemas))}
    assert kinds["shapes.actions.create"] == kinds["shapes.actions.get"] == kinds["shapes.actions.list.automation"]
    assert kinds["shapes.actions.create"] != kinds["shapes.actions.list.workflows"]
    assert kinds["shapes.widgets.create"] == kinds["shapes.widgets.get.by_id"] == kinds["shapes.widgets.list"]


# --- the mock -----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_create_makes_a_fresh_id_whatever_read_only_id_the_request_carries(mock: httpx.AsyncClient) -> None:
    first, second = await _widget(mock), await _widget(mock)
    assert first["id"] != second["id"] and "W1" not in (first["id"], second["id"])
    assert (first["name"], first["colour"]) == ("Sprocket", "red")


@pytest.mark.anyio
async def test_a_get_and_a_list_answering_under_other_schema_names_see_what_the_create_stored(
    mock: httpx.AsyncClient,
) -> None:
    widget = await _widget(mock, "Gear")
    got = await mock.get(f"/widgets/{widget['id']}")
    assert got.status_code == 200 and got.json()["widget"]["name"] == "Gear"
    listed = (await mock.get("/widgets")).json()["widgets"]
    assert [item["id"] for item in listed] == [widget["id"]]


@pytest.mark.anyio
async def test_an_enum_segment_after_the_id_selects_a_view_of_the_item_the_id_names(mock: httpx.AsyncClient) -> None:
    widget = await _widget(mock, "Cog")
    viewed = await mock.get(f"/widgets/{widget['id']}/full")
    assert viewed.status_code == 200 and viewed.json()["widget"]["name"] == "Cog"


@pytest.mark.anyio
async def test_an_item_answered_in_an_envelope_as_one_of_two_shapes_is_stored_and_found(
    mock: httpx.AsyncClient,
) -> None:
    created = await mock.post("/automation/actions", json={"action": {"name": "restart", "action_type": "job"}})
    action = created.json()["action"]
    assert created.status_code == 201 and (action["name"], action["action_type"]) == ("restart", "job")
    got = await mock.get(f"/automation/actions/{action['id']}")
    assert got.status_code == 200 and got.json()["action"] == action
    workflows = (await mock.get("/workflows/actions")).json()["actions"]
    assert action["id"] not in [item["id"] for item in workflows]


@pytest.mark.anyio
async def test_an_item_of_a_kind_the_api_cannot_create_can_be_deleted_once(mock: httpx.AsyncClient) -> None:
    assert (await mock.delete("/memories/m-1")).status_code == 204
    assert (await mock.delete("/memories/m-1")).status_code == 404
    assert (await mock.delete("/memories/m-2")).status_code == 204


@pytest.mark.anyio
async def test_after_a_reset_the_same_requests_get_the_same_answers(mock: httpx.AsyncClient) -> None:
    first = (await mock.post("/tokens", json={"label": "ci"})).json()
    assert (await mock.post("/__anvil/reset")).status_code == 200
    again = (await mock.post("/tokens", json={"label": "ci"})).json()
    assert first == again and re.fullmatch(r"[0-9a-f-]{36}", first["id"])


def test_an_answer_field_that_does_not_fit_is_replaced_without_losing_the_items_identity() -> None:
    schemas = SchemaSet({})
    fitter = AnswerFitter(schemas, ValueMaker(schemas))
    schema = {
        "type": "object",
        "required": ["field"],
        "properties": {
            "field": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string"}, "data_type": {"enum": ["boolean", "string"]}},
            }
        },
    }
    fitted = fitter.fit(schema, {"field": {"id": "fiel_7", "data_type": "free text"}}, "field")
    assert isinstance(fitted, dict) and fitted["field"]["id"] == "fiel_7"
    assert fitted["field"]["data_type"] in ("boolean", "string")


@pytest.mark.anyio
async def test_an_id_the_api_answers_as_a_string_but_addresses_as_an_integer_is_digits(
    mock: httpx.AsyncClient,
) -> None:
    created = (await mock.post("/filters", json={"name": "open bugs"})).json()
    assert created["id"].isdigit()
    assert (await mock.get(f"/filters/{created['id']}")).json()["name"] == "open bugs"


@pytest.mark.anyio
async def test_a_field_the_answer_marks_read_only_is_kept_when_the_request_schema_sets_it(
    mock: httpx.AsyncClient,
) -> None:
    role = (await mock.post("/roles", json={"name": "Developers", "description": "Writes code"})).json()
    assert (role["name"], role["description"]) == ("Developers", "Writes code")


@pytest.mark.anyio
async def test_an_item_is_named_by_the_field_its_path_names_even_when_only_the_create_answers_it(
    mock: httpx.AsyncClient,
) -> None:
    first = (await mock.post("/workflows", json={"name": "one"})).json()
    second = (await mock.post("/workflows", json={"name": "two"})).json()
    assert first["entityId"] != second["entityId"]
    assert (await mock.delete(f"/workflows/{second['entityId']}")).status_code == 204
    assert [w["name"] for w in (await mock.get("/workflows")).json()] == ["one"]


@pytest.mark.anyio
async def test_a_create_answering_only_ids_stores_the_whole_item_and_a_reference_by_id(
    mock: httpx.AsyncClient,
) -> None:
    created = await mock.post("/projects", json={"key": "ANV", "name": "Anvil", "lead": "acc-7"})
    assert set(created.json()) == {"id", "key"}
    project = (await mock.get(f"/projects/{created.json()['key']}")).json()
    assert (project["name"], project["lead"]["accountId"]) == ("Anvil", "acc-7")


@pytest.mark.anyio
async def test_an_item_named_by_id_or_key_gets_its_own_of_each_and_is_found_by_either(
    mock: httpx.AsyncClient,
) -> None:
    first = (await mock.post("/issues", json={"fields": {}})).json()
    second = (await mock.post("/issues", json={"fields": {}})).json()
    assert first["id"] != second["id"] and first["key"] != second["key"]
    assert (await mock.get(f"/issues/{second['key']}")).json()["id"] == second["id"]
    assert (await mock.get(f"/issues/{second['id']}")).json()["key"] == second["key"]


@pytest.mark.anyio
async def test_a_bulk_create_answers_its_item_in_the_list_and_a_named_page_lists_it(mock: httpx.AsyncClient) -> None:
    made = (await mock.post("/fields/f1/options", json={"options": [{"value": "red"}]})).json()["options"]
    assert [option["value"] for option in made] == ["red"]
    page = (await mock.get("/fields/f1/options")).json()
    assert [option["id"] for option in page["values"]] == [made[0]["id"]]
    assert (await mock.delete(f"/fields/f1/options/{made[0]['id']}")).status_code == 204


@pytest.mark.anyio
async def test_items_nothing_creates_are_filled_in_whatever_key_or_closed_value_names_them(
    mock: httpx.AsyncClient,
) -> None:
    assert (await mock.get("/statuses/done")).status_code == 200
    assert (await mock.get("/statuses/open")).status_code == 200  # another key: another item, no clash
    assert (await mock.get("/project-types/software")).json()["key"] == "software"
    assert (await mock.get("/tasks/custom_id/EX-9")).status_code == 200


@pytest.mark.anyio
async def test_a_list_filter_by_id_matches_the_object_a_reference_became(mock: httpx.AsyncClient) -> None:
    created = await mock.post("/tasks", json={"data": {"name": "Write docs", "parent": "777"}})
    task = created.json()["data"]
    assert task["parent"]["gid"] == "777" and task["gid"] != "12345"
    assert [t["gid"] for t in (await mock.get("/tasks", params={"parent": "777"})).json()["data"]] == [task["gid"]]
    assert (await mock.get("/tasks", params={"parent": "778"})).json()["data"] == []


@pytest.mark.anyio
async def test_an_id_fits_the_pattern_of_the_path_that_addresses_it(mock: httpx.AsyncClient) -> None:
    order = (await mock.post("/orders", json={"intent": "CAPTURE"})).json()
    assert re.fullmatch(r"[A-Z0-9]+", order["id"])
    assert (await mock.get(f"/orders/{order['id']}")).status_code == 200


@pytest.mark.anyio
async def test_a_write_on_no_item_answers_with_what_it_set_and_a_long_query_is_logged_whole(
    mock: httpx.AsyncClient,
) -> None:
    answer = await mock.put("/settings", params={"key": "theme"}, json={"value": "dark"})
    assert answer.json()["value"] == "dark"
    fields = [f"f{n:02d}" for n in range(1, 71)]
    await mock.get("/tasks", params=[("parent", "1")] + [("opt_fields", f) for f in fields])
    logged = (await mock.get("/__anvil/requests")).json()["requests"][-1]
    assert [v for k, v in logged["query"] if k == "opt_fields"] == fields


@pytest.mark.anyio
async def test_a_trailing_slash_is_logged_as_sent_and_a_fault_on_that_path_is_taken(mock: httpx.AsyncClient) -> None:
    team = (await mock.post("/teams/", json={"slug": "core", "name": "Core"})).json()
    assert team["slug"] == "core"
    fault = {"status": 404, "method": "GET", "path": "/teams/core/", "body": {"message": "gone"}}
    assert (await mock.post("/__anvil/fault", json=fault)).status_code == 201
    assert (await mock.get("/teams/core/")).status_code == 404
    assert (await mock.get("/teams/core/")).json()["name"] == "Core"
    logged = (await mock.get("/__anvil/requests")).json()["requests"]
    assert [entry["path"] for entry in logged[-2:]] == ["/teams/core/", "/teams/core/"]


@pytest.mark.anyio
async def test_an_item_with_one_list_of_its_own_is_an_item_not_a_page(mock: httpx.AsyncClient) -> None:
    member = (await mock.post("/members/", json={"email": "ada@example.com"})).json()
    assert member["email"] == "ada@example.com" and isinstance(member["teams"], list)
    assert (await mock.get(f"/members/{member['id']}/")).json()["id"] == member["id"]


@pytest.mark.anyio
async def test_a_body_id_no_path_can_address_gives_way_to_an_id_the_api_makes(mock: httpx.AsyncClient) -> None:
    dashboard = (await mock.post("/dashboards/", json={"id": "mine", "title": "Errors"})).json()
    assert dashboard["id"].isdigit()
    assert (await mock.get(f"/dashboards/{dashboard['id']}/")).json()["title"] == "Errors"


@pytest.mark.anyio
async def test_a_list_that_must_hold_items_holds_ones_its_filters_select_and_its_answer_fits(
    mock: httpx.AsyncClient,
) -> None:
    first = (await mock.get("/conversations.history", params={"channel": "C1"})).json()
    assert len(first["messages"]) == 1 and set(first["messages"][0]) <= {"text", "ts", "channel_name", "edited"}
    again = (await mock.get("/conversations.history", params={"channel": "C1"})).json()
    assert again["messages"] == first["messages"]


@pytest.mark.anyio
async def test_an_rpc_remove_takes_away_what_its_add_stored_named_by_what_the_add_took(
    mock: httpx.AsyncClient,
) -> None:
    token = {"token": "t"}

    async def pins() -> list[object]:
        return (await mock.get("/__anvil/items", params={"kind": "pins_add"})).json()["items"]

    assert (await mock.post("/pins.add", data={"channel": "C1", "timestamp": "1.5"}, headers=token)).is_success
    assert (await mock.post("/pins.add", data={"channel": "C2"}, headers=token)).is_success
    assert len(await pins()) == 2
    other = await mock.post("/pins.remove", data={"channel": "C1", "timestamp": "9.9"}, headers=token)
    assert other.status_code == 404 and len(await pins()) == 2  # no pin at that timestamp
    removed = await mock.post("/pins.remove", data={"channel": "C1", "timestamp": "1.5"}, headers=token)
    assert removed.status_code == 200 and set(removed.json()) == {"ok"}
    assert len(await pins()) == 1
    reminder = (await mock.post("/reminders.add", data={"text": "call"})).json()["reminder"]
    assert (await mock.post("/reminders.delete", data={"reminder": "nope"})).status_code == 404
    assert (await mock.post("/reminders.delete", data={"reminder": reminder["id"]})).status_code == 200
    assert (await mock.post("/reminders.delete", data={"reminder": reminder["id"]})).status_code == 404


def test_the_mocks_check_reads_nullable_and_a_tuple_of_items_as_the_spec_means_them() -> None:
    schemas = SchemaSet({})
    nullable = {"type": "object", "properties": {"edited": {"type": "object", "nullable": True}}}
    assert Validator(nullable, schemas).problem({"edited": None}) is None
    assert Validator(nullable, schemas).problem({"edited": 1}) is not None
    pair = {"items": [{"type": "integer"}, {"type": "null"}]}
    assert Validator(pair, schemas).problem([1, None]) is None
    assert Validator(pair, schemas).problem(["one"]) is not None


# --- the lanes ------------------------------------------------------------------------------------------


def test_selftest_passes_every_check_on_the_shapes_and_proves_the_inverses_by_state(shapes: Path) -> None:
    report = anyio.run(lambda: run_selftest(shapes, SelftestOptions(env=_environ()), write=False))
    assert [(c.id, c.operation, c.detail) for c in report.checks if c.status != "pass"] == []
    by_id = {(c.id, c.operation): c for c in report.checks}
    assert "on an item it made" in by_id[("fidelity", "shapes.overrides.delete")].detail  # made by a bulk create
    assert "on an item it made" in by_id[("fidelity", "shapes.widgets.get.by_view")].detail
    assert "on an item it made" in by_id[("fidelity", "shapes.filters.get")].detail  # a string id, an int path
    assert "in its carrier on the wire" in by_id[("key-forwarding", "shapes.orders.create")].detail
    assert by_id[("error-mapping", "shapes.teams.get")].status == "pass"  # a fault on a path ending in /
    inverses = {c.operation: c.basis for c in report.checks if c.id == "effect-inverse"}
    assert inverses == {
        "shapes.widgets.create": "api-read",
        "shapes.actions.create": "api-read",
        "shapes.workflows.create": "api-read",
        "shapes.tasks.create": "api-read",
        "shapes.tokens.create": "mock-state",  # no approved read observes a token
        "shapes.roles.create": "mock-state",  # nor a role
        "shapes.assets.create": "api-read",  # the asset answered beside its upload form
        "shapes.pins.add": "mock-state",  # an RPC add undone by its remove, named by what the add took
        "shapes.reminders.add": "mock-state",  # ... or by the id the add answered
    }
    assert "on an item it made" in by_id[("fidelity", "shapes.pins.remove")].detail


def test_conformance_answers_agree_on_every_surface_for_the_shapes(shapes: Path) -> None:
    record = conformance(shapes, environ=_environ())
    failed = [check for check in record["checks"] if check["status"] != "pass"]
    assert failed == [] and record["summary"]["pass"] > 0


def test_conformance_skips_an_operation_no_valid_example_can_be_made_for_and_says_why(events: Path) -> None:
    record = conformance(events, environ=_environ(), scope=LaneScope(operations=("events.reports.create",)))
    live = [check for check in record["checks"] if check.get("operationId") == "events.reports.create"]
    statuses = {check["id"]: check["status"] for check in live if check["id"] != "skill-claim"}
    assert set(statuses.values()) == {"skipped"} and "wire-agreement" in statuses
    assert all(check["detail"].startswith("no valid example input can be made") for check in live[1:])


def test_simulate_passes_every_cell_on_the_shapes(shapes: Path) -> None:
    record = simulate(shapes)
    failed = [cell for cell in record["coverage"]["cells"] if not cell["ok"]]
    assert failed == [] and record["coverage"]["skipped"] == []
    cells = record["coverage"]["cells"]
    # Items inside allOf [Page, {widgets}] are not located by the contract (as the original infers
    # pagination): an offset page whose items an agent cannot count cannot be continued either.
    widgets = {
        c["variant"]: c["actual"]
        for c in cells
        if (c["operationId"], c["dimension"]) == ("shapes.widgets.list", "pagination")
    }
    assert widgets == {"first-page": "page 1: items unlocated, continuation unlocated"}
    # An integer cursor continues with a number, though the next field is a link (a string).
    failed_hooks = {c["variant"]: c["actual"] for c in cells if c["operationId"] == "shapes.failed.list"}
    assert failed_hooks["next-page"] == "page 2 requested with after=2"
