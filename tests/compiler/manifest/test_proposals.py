"""``anvil init --propose-effects``: a create paired with the delete that undoes it, arguments mapped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from anvil.compiler import build, compile_source
from anvil.compiler.manifest.draft import PROPOSED_MARK, draft_manifest
from anvil.compiler.manifest.proposals import Proposal, propose_effects, propose_idempotency
from anvil.load.result import LoadResult

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _ok(description: str = "ok", schema: Any = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description}
    if schema is not None:
        answer["content"] = {"application/json": {"schema": schema}}
    return {"200": answer}


def test_a_github_comment_is_undone_by_deleting_it_with_the_new_comments_id() -> None:
    doc = build(EXAMPLES / "github-mini" / "openapi.yaml", service_id="github").document
    proposal = propose_effects(doc)["github.comments.create"]
    assert proposal.effect == {
        "class": "reversible",
        "inverse": {
            "operation": "github.comments.delete",
            "arguments": {"owner": "request.owner", "repo": "request.repo", "comment_id": "response.id"},
        },
    }


def test_a_wrapped_answer_and_a_read_on_the_item_give_an_inverse_and_a_lookup() -> None:
    team = {"type": "object", "properties": {"team": {"$ref": "#/components/schemas/Team"}}}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Teams", "version": "1"},
        "paths": {
            "/teams": {"post": {"operationId": "createTeam", "responses": _ok(schema=team)}},
            "/teams/{team_id}": {
                "parameters": [{"name": "team_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "get": {"operationId": "getTeam", "responses": _ok(schema=team)},
                "delete": {"operationId": "deleteTeam", "responses": _ok()},
            },
        },
        "components": {"schemas": {"Team": {"type": "object", "properties": {"id": {"type": "string"}}}}},
    }
    doc = compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="teams").document
    effect = propose_effects(doc)["teams.teams.create"].effect
    assert effect is not None
    assert effect["inverse"] == {"operation": "teams.teams.delete", "arguments": {"team_id": "response.team.id"}}
    assert effect["lookup"] == {
        "operation": "teams.teams.get",
        "by": "id",
        "arguments": {"team_id": "response.team.id"},
    }


def test_a_create_with_nothing_that_undoes_it_gets_a_reason_not_a_proposal() -> None:
    doc = build(EXAMPLES / "payments" / "openapi.yaml", service_id="payments").document
    proposals = propose_effects(doc)
    assert proposals and all(p.effect is None and p.reasons for p in proposals.values())


def test_the_drafted_proposal_is_marked_for_review_and_compiles_without_effect_errors(tmp_path: Path) -> None:
    spec = EXAMPLES / "github-mini" / "openapi.yaml"
    doc = build(spec, service_id="github").document
    text = draft_manifest(doc, approve="all", proposals=propose_effects(doc))
    assert text.count(PROPOSED_MARK) >= 1
    entry = yaml.safe_load(text)["operations"]["github.comments.create"]
    assert entry["effect"]["class"] == "reversible"
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(text, encoding="utf-8")
    result = build(spec, manifest=manifest, service_id="github")
    assert [d for d in result.diagnostics if d.code.startswith("effect/") and d.severity == "error"] == []
    created = result.document.operation("github.comments.create")
    assert created is not None and created.effect.inverse is not None


def test_an_item_answered_as_one_of_two_shapes_is_undone_by_the_id_both_shapes_carry() -> None:
    shape = {"type": "object", "properties": {"id": {"type": "string"}, "kind": {"type": "string"}}}
    action = {"type": "object", "properties": {"action": {"oneOf": [{"$ref": "#/components/schemas/A"}, shape]}}}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Actions", "version": "1"},
        "paths": {
            "/actions": {"post": {"operationId": "createAction", "responses": _ok(schema=action)}},
            "/actions/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "delete": {"operationId": "deleteAction", "responses": _ok()},
            },
        },
        "components": {"schemas": {"A": {"type": "object", "properties": {"id": {"type": "string"}}}}},
    }
    doc = compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="acts").document
    effect = propose_effects(doc)["acts.actions.create"].effect
    assert effect is not None
    assert effect["inverse"] == {"operation": "acts.actions.delete", "arguments": {"id": "response.action.id"}}


def test_a_delete_in_another_collection_ending_in_the_same_word_is_not_proposed_as_the_inverse() -> None:
    key = {"type": "object", "properties": {"id": {"type": "string"}}}
    param = {"in": "path", "required": True, "schema": {"type": "string"}}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Keys", "version": "1"},
        "paths": {
            "/projects/{p}/service_accounts/{s}/api_keys": {
                "parameters": [{"name": "p", **param}, {"name": "s", **param}],
                "post": {"operationId": "createServiceAccountKey", "responses": _ok(schema=key)},
            },
            "/projects/{p}/api_keys/{key_id}": {
                "parameters": [{"name": "p", **param}, {"name": "key_id", **param}],
                "delete": {"operationId": "deleteProjectKey", "responses": _ok()},
            },
        },
    }
    doc = compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="keys").document
    (proposal,) = propose_effects(doc).values()
    assert proposal.effect is None and proposal.reasons


def test_a_write_taking_an_idempotency_key_header_gets_an_idempotency_block_proposed() -> None:
    def header(name: str, required: bool = False, description: str = "") -> dict[str, Any]:
        return {"name": name, "in": "header", "required": required, "description": description, "schema": {}}

    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Shop", "version": "1"},
        "paths": {
            "/orders": {
                "post": {"operationId": "createOrder", "parameters": [header("PayPal-Request-Id")], "responses": _ok()},
                "get": {"operationId": "listOrders", "parameters": [header("Idempotency-Key")], "responses": _ok()},
            },
            "/refunds": {
                "post": {
                    "operationId": "createRefund",
                    "parameters": [header("Idempotency-Key", required=True)],
                    "responses": _ok(),
                }
            },
            "/notes": {
                "post": {
                    "operationId": "createNote",
                    "parameters": [header("X-Request-Token", description="Makes the request idempotent.")],
                    "responses": _ok(),
                }
            },
        },
    }
    doc = compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="shop").document
    proposed = propose_idempotency(doc)
    assert proposed == {
        "shop.orders.create": {"strategy": "key_supported", "key_location": "header", "header": "PayPal-Request-Id"},
        "shop.refunds.create": {
            "strategy": "required_request_key",
            "key_location": "header",
            "header": "Idempotency-Key",
        },
        "shop.notes.create": {"strategy": "key_supported", "key_location": "header", "header": "X-Request-Token"},
    }
    proposals = {op_id: Proposal(op_id, idempotency=block) for op_id, block in proposed.items()}
    text = draft_manifest(doc, approve="all", proposals=proposals)
    entry = yaml.safe_load(text)["operations"]["shop.orders.create"]
    assert entry["idempotency"]["header"] == "PayPal-Request-Id"
    assert PROPOSED_MARK in text and "no effect proposed" not in text


def test_a_described_key_header_whose_name_no_request_can_carry_is_not_proposed() -> None:
    def post(name: str) -> dict[str, Any]:
        header = {"name": name, "in": "header", "description": "An idempotency key.", "schema": {}}
        return {"post": {"operationId": "create", "parameters": [header], "responses": _ok()}}

    for name in ("Idempotency Key", "Key\n    risk: low", "Key\u2028", ""):
        spec = {"openapi": "3.0.3", "info": {"title": "Shop", "version": "1"}, "paths": {"/orders": post(name)}}
        doc = compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="shop").document
        assert propose_idempotency(doc) == {}, name


def _form(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {"content": {"application/x-www-form-urlencoded": {"schema": schema}}}


def _rpc(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> dict[str, Proposal]:
    spec: dict[str, Any] = {"openapi": "3.0.3", "info": {"title": "Rpc", "version": "1"}, "paths": paths}
    if schemas:
        spec["components"] = {"schemas": schemas}
    return propose_effects(compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="rpc").document)


_TEXT: dict[str, Any] = {"type": "string"}
_OK: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def test_an_rpc_add_is_undone_by_its_remove_taking_the_identifying_arguments_the_add_took() -> None:
    token = [{"name": "token", "in": "header", "required": True, "schema": _TEXT}]
    pin = _form({"channel": _TEXT, "timestamp": _TEXT}, ["channel"])
    proposals = _rpc(
        {
            "/pins.add": {"post": {"parameters": token, "requestBody": pin, "responses": _ok(schema=_OK)}},
            "/pins.remove": {"post": {"parameters": token, "requestBody": pin, "responses": _ok(schema=_OK)}},
        }
    )
    assert proposals["rpc.pins.add"].effect == {
        "class": "reversible",
        "inverse": {
            "operation": "rpc.pins.remove",
            "arguments": {"token": "request.token", "channel": "request.channel", "timestamp": "request.timestamp?"},
        },
    }


def test_an_rpc_delete_takes_the_id_the_add_answered_inside_its_envelope() -> None:
    reminder = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "reminder": {"$ref": "#/components/schemas/R"}},
    }
    proposals = _rpc(
        {
            "/reminders.add": {"post": {"requestBody": _form({"text": _TEXT}), "responses": _ok(schema=reminder)}},
            "/reminders.delete": {"post": {"requestBody": _form({"reminder": _TEXT}), "responses": _ok(schema=_OK)}},
        },
        {"R": {"type": "object", "properties": {"id": _TEXT, "text": _TEXT}}},
    )
    effect = proposals["rpc.reminders.add"].effect
    assert effect is not None
    assert effect["inverse"] == {"operation": "rpc.reminders.delete", "arguments": {"reminder": "response.reminder.id"}}


def test_an_rpc_remove_requiring_what_the_add_may_be_called_without_is_left_out_saying_why() -> None:
    proposals = _rpc(
        {
            "/groups.addMember": {
                "post": {"requestBody": _form({"group": _TEXT, "team": _TEXT}, ["group"]), "responses": _ok()}
            },
            "/groups.removeMember": {
                "post": {"requestBody": _form({"group": _TEXT, "team": _TEXT}, ["group", "team"]), "responses": _ok()}
            },
        }
    )
    proposal = next(p for op_id, p in proposals.items() if op_id.endswith("add_member"))
    assert proposal.effect is None
    assert proposal.reasons == (
        "rpc.groups.remove_member requires 'team', which rpc.groups.add_member may be called without",
    )


def test_an_rpc_create_with_a_whole_body_gives_its_remove_the_bodys_fields_and_the_answers_id() -> None:
    body = {
        "type": "object",
        "required": ["user", "details"],
        "properties": {"user": _TEXT, "details": {"type": "object", "properties": {"query": _TEXT}}},
    }
    answer = {"type": "object", "properties": {"rule": {"type": "object", "properties": {"id": _TEXT}}}}
    remove = _form({"user": _TEXT, "rule_id": _TEXT}, ["user", "rule_id"])
    json_body = {"required": True, "content": {"application/json": {"schema": body}}}
    proposals = _rpc(
        {
            "/rules/create": {"post": {"requestBody": json_body, "responses": _ok(schema=answer)}},
            "/rules/remove": {"post": {"requestBody": remove, "responses": _ok()}},
        }
    )
    proposal = next(p for op_id, p in proposals.items() if "remove" not in op_id)
    assert proposal.effect is not None
    assert proposal.effect["inverse"]["arguments"] == {"user": "request.body.user", "rule_id": "response.rule.id"}


def _doc(paths: dict[str, Any], schemas: dict[str, Any] | None = None, sid: str = "api") -> Any:
    spec: dict[str, Any] = {"openapi": "3.0.3", "info": {"title": "Api", "version": "1"}, "paths": paths}
    if schemas:
        spec["components"] = {"schemas": schemas}
    return compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id=sid).document


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": _TEXT}


def test_a_create_and_delete_whose_paths_carry_a_format_suffix_are_paired_by_the_sid_the_create_answers() -> None:
    address = {"type": "object", "properties": {"sid": _TEXT, "account_sid": _TEXT}}
    account = [_path_param("AccountSid")]
    paths = {
        "/2010-04-01/Accounts/{AccountSid}/Addresses.json": {
            "parameters": account,
            "post": {
                "operationId": "CreateAddress",
                "requestBody": _form({"CustomerName": _TEXT}, ["CustomerName"]),
                "responses": _ok(schema=address),
            },
        },
        "/2010-04-01/Accounts/{AccountSid}/Addresses/{Sid}.json": {
            "parameters": [*account, _path_param("Sid")],
            "get": {"operationId": "FetchAddress", "responses": _ok(schema=address)},
            "delete": {"operationId": "DeleteAddress", "responses": {"204": {"description": "gone"}}},
        },
    }
    doc = _doc(paths, sid="phone")
    (create,) = [op for op in doc.operations if op.source_ref.method == "post"]
    (delete,) = [op for op in doc.operations if op.source_ref.method == "delete"]
    (fetch,) = [op for op in doc.operations if op.source_ref.method == "get"]
    effect = propose_effects(doc)[create.id].effect
    arguments = {"account_sid": "request.account_sid", "sid": "response.sid"}
    assert effect == {
        "class": "reversible",
        "inverse": {"operation": delete.id, "arguments": arguments},
        "lookup": {"operation": fetch.id, "by": "id", "arguments": arguments},
    }
    assert _effect_errors(paths, doc) == []


def test_a_delete_requiring_fields_the_creates_whole_body_requires_takes_them_from_the_body() -> None:
    stored = {"type": "object", "properties": {"id": _TEXT, "shopperReference": _TEXT}}
    body = {
        "type": "object",
        "required": ["merchantAccount", "shopperReference", "paymentMethod"],
        "properties": {
            "merchantAccount": _TEXT,
            "shopperReference": _TEXT,
            "paymentMethod": {"type": "object", "properties": {"type": _TEXT}},
        },
    }
    query = [
        {"name": name, "in": "query", "required": True, "schema": _TEXT}
        for name in ("shopperReference", "merchantAccount")
    ]
    paths = {
        "/storedPaymentMethods": {
            "post": {
                "operationId": "post-storedPaymentMethods",
                "requestBody": {"content": {"application/json": {"schema": body}}},
                "responses": _ok(schema=stored),
            }
        },
        "/storedPaymentMethods/{storedPaymentMethodId}": {
            "delete": {
                "operationId": "delete-storedPaymentMethods-storedPaymentMethodId",
                "parameters": [_path_param("storedPaymentMethodId"), *query],
                "responses": {"204": {"description": "gone"}},
            }
        },
    }
    doc = _doc(paths, sid="checkout")
    (create,) = [op for op in doc.operations if op.source_ref.method == "post"]
    proposal = propose_effects(doc)[create.id]
    assert proposal.reasons == ()
    assert proposal.effect is not None
    assert proposal.effect["inverse"]["arguments"] == {
        "stored_payment_method_id": "response.id",
        "shopper_reference": "request.body.shopperReference",
        "merchant_account": "request.body.merchantAccount",
    }
    assert _effect_errors(paths, doc) == []


def _effect_errors(paths: dict[str, Any], doc: Any) -> list[str]:
    """The effect/* errors of the spec compiled with the manifest init drafts for it, proposals included."""
    from anvil.compiler.manifest.parse import parse_manifest

    manifest, _ = parse_manifest(draft_manifest(doc, approve="all", proposals=propose_effects(doc)), "anvil.yaml")
    spec = {"openapi": "3.0.3", "info": {"title": "Api", "version": "1"}, "paths": paths}
    result = compile_source(LoadResult(document=spec, version="3.0.3"), manifest, service_id=doc.service.id)
    return [d.code for d in result.diagnostics if d.code.startswith("effect/") and d.severity == "error"]


def _links_spec(status_schema: dict[str, Any]) -> dict[str, Any]:
    link = {"type": "object", "properties": {"id": _TEXT, "url": _TEXT}}
    update = {"type": "object", "required": ["status"], "properties": {"status": status_schema}}
    paths = {
        "/paymentLinks": {"post": {"operationId": "createLink", "responses": _ok(schema=link)}},
        "/paymentLinks/{linkId}": {
            "parameters": [_path_param("linkId")],
            "get": {"operationId": "getLink", "responses": _ok(schema=link)},
            "patch": {
                "operationId": "updateLink",
                "requestBody": {"required": True, "content": {"application/json": {"schema": update}}},
                "responses": _ok(schema=link),
            },
        },
    }
    return {"openapi": "3.0.3", "info": {"title": "Links", "version": "1"}, "paths": paths}


def _links(status_schema: dict[str, Any]) -> Any:
    loaded = LoadResult(document=_links_spec(status_schema), version="3.0.3")
    return compile_source(loaded, None, service_id="links").document


def test_a_create_without_a_delete_is_compensated_by_the_update_that_moves_it_to_a_terminal_status() -> None:
    doc = _links({"type": "string", "enum": ["active", "expired"]})
    effect = propose_effects(doc)["links.payment_links.create"].effect
    assert effect == {
        "class": "compensable",
        "compensate": {
            "operation": "links.payment_links.update",
            "arguments": {"link_id": "response.id", "status": {"const": "expired"}},
        },
        "lookup": {"operation": "links.payment_links.get", "by": "id", "arguments": {"link_id": "response.id"}},
    }


def test_an_update_whose_status_enumerates_no_terminal_state_is_not_proposed() -> None:
    doc = _links({"type": "string", "enum": ["active", "paused"]})
    proposal = propose_effects(doc)["links.payment_links.create"]
    assert proposal.effect is None and proposal.reasons


def test_the_drafted_terminal_compensation_compiles_without_effect_errors() -> None:
    from anvil.compiler.manifest.parse import parse_manifest

    status = {"type": "string", "enum": ["active", "closed"]}
    doc = _links(status)
    text = draft_manifest(doc, approve="all", proposals=propose_effects(doc))
    manifest, found = parse_manifest(text, "anvil.yaml")
    assert manifest is not None and not [d for d in found if d.severity == "error"]
    loaded = LoadResult(document=_links_spec(status), version="3.0.3")
    result = compile_source(loaded, manifest, service_id="links")
    assert [d.code for d in result.diagnostics if d.code.startswith("effect/") and d.severity == "error"] == []
    created = result.document.operation("links.payment_links.create")
    assert created is not None and created.effect.compensate is not None


def test_a_create_whose_item_path_has_a_cancel_call_is_compensated_by_cancelling_it() -> None:
    batch = {"type": "object", "properties": {"id": _TEXT, "status": _TEXT}}
    item = [_path_param("batch_id")]
    paths = {
        "/batches": {"post": {"operationId": "createBatch", "responses": _ok(schema=batch)}},
        "/batches/{batch_id}": {
            "parameters": item,
            "get": {"operationId": "retrieveBatch", "responses": _ok(schema=batch)},
        },
        "/batches/{batch_id}/cancel": {
            "parameters": item,
            "post": {"operationId": "cancelBatch", "responses": _ok(schema=batch)},
        },
    }
    doc = _doc(paths, sid="ai")
    (create,) = [op for op in doc.operations if op.source_ref.path == "/batches"]
    (cancel,) = [op for op in doc.operations if op.source_ref.path == "/batches/{batch_id}/cancel"]
    (read,) = [op for op in doc.operations if op.source_ref.method == "get"]
    assert propose_effects(doc)[create.id].effect == {
        "class": "compensable",
        "compensate": {"operation": cancel.id, "arguments": {"batch_id": "response.id"}},
        "lookup": {"operation": read.id, "by": "id", "arguments": {"batch_id": "response.id"}},
    }
    assert _effect_errors(paths, doc) == []


def _keyed_body(key: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"idempotency_key": key, "amount": _TEXT}, "required": required}
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def test_a_write_whose_json_body_has_an_idempotency_key_field_gets_a_body_carrier_proposed_that_compiles() -> None:
    key = {"$ref": "#/components/schemas/Key"}
    retired = {"type": "string", "deprecated": True}
    paths = {
        "/transfers": {"post": {"operationId": "transferCreate", "requestBody": _keyed_body(key, ["amount"])}},
        "/refunds": {"post": {"operationId": "refundCreate", "requestBody": _keyed_body(key, ["idempotency_key"])}},
        "/olds": {"post": {"operationId": "oldCreate", "requestBody": _keyed_body(retired, [])}},
    }
    for item in paths.values():
        item["post"]["responses"] = _ok()
    spec: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Pay", "version": "1"},
        "paths": paths,
        "components": {"schemas": {"Key": {"type": "string", "maxLength": 50, "description": "A key."}}},
    }
    doc = compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="pay").document
    proposed = propose_idempotency(doc)
    body = {"key_location": "body", "field": "idempotency_key"}
    assert proposed == {
        "pay.transfers.create": {"strategy": "key_supported", **body},
        "pay.refunds.create": {"strategy": "required_request_key", **body},
    }
    proposals = {op_id: Proposal(op_id, idempotency=block) for op_id, block in proposed.items()}
    from anvil.compiler.manifest.parse import parse_manifest

    manifest, _ = parse_manifest(draft_manifest(doc, approve="all", proposals=proposals), "anvil.yaml")
    compiled = compile_source(LoadResult(document=spec, version="3.0.3"), manifest, service_id="pay")
    assert [d.code for d in compiled.diagnostics if "idempotency" in d.code and d.severity == "error"] == []
    by_id = {op.id: op for op in compiled.document.operations}
    refund, transfer = by_id["pay.refunds.create"].idempotency, by_id["pay.transfers.create"].idempotency
    assert (refund.mode, refund.mechanism, refund.key) == ("required", "body", "idempotency_key")
    assert (transfer.mode, transfer.mechanism, transfer.key) == ("key_supported", "body", "idempotency_key")
