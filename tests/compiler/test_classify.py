"""The conservative classifier (original-core §3.4, scenarios §9.3.2-§9.3.3)."""

from __future__ import annotations

from anvil.air.model import (
    BodyField,
    Cli,
    Effect,
    Idempotency,
    Input,
    Mcp,
    Operation,
    Param,
    RequestBody,
    RetryPolicy,
)
from anvil.compiler.classify import (
    TRANSIENT_CONDITIONS,
    archetype_for,
    classify_operation,
    confirmation_for,
    retry_policy_for,
)


def test_a_get_is_a_natural_read_without_confirmation() -> None:
    c = classify_operation(method="GET", path="/customers/{id}", operation_id="getCustomer", summary=None)
    assert (c.effect.kind, c.effect.action, c.effect.risk, c.effect.reversible) == ("read", "get", "none", True)
    assert c.effect.resource == "customer"
    assert c.idempotency.mode == "natural"
    assert not confirmation_for(c.effect, c.idempotency).required
    retries = retry_policy_for(c.effect, c.idempotency)
    assert (retries.mode, retries.basis, retries.max_attempts, retries.backoff) == (
        "safe",
        "read_safe",
        3,
        "exponential_jitter",
    )
    assert retries.retry_on == TRANSIENT_CONDITIONS


def test_a_list_read_without_a_trailing_param_is_list() -> None:
    c = classify_operation(method="get", path="/customers", operation_id=None, summary=None)
    assert c.effect.action == "list"


def test_create_refund_is_an_irreversible_financial_mutation_that_confirms() -> None:
    c = classify_operation(
        method="POST", path="/payments/{payment_id}/refunds", operation_id="createRefund", summary=None
    )
    assert (c.effect.kind, c.effect.action, c.effect.risk, c.effect.reversible) == (
        "mutation",
        "create",
        "financial",
        False,
    )
    assert c.idempotency.mode == "none"
    confirmation = confirmation_for(c.effect, c.idempotency)
    assert confirmation.required
    assert confirmation.risk == "financial"
    assert confirmation.reason == "This operation is an irreversible financial mutation."
    retries = retry_policy_for(c.effect, c.idempotency)
    assert (retries.mode, retries.basis, retries.max_attempts, retries.backoff, retries.retry_on) == (
        "none",
        "unproven",
        1,
        "none",
        (),
    )


def test_a_delete_is_destructive_irreversible_and_natural() -> None:
    c = classify_operation(method="DELETE", path="/widgets/{id}", operation_id=None, summary=None)
    assert (c.effect.risk, c.effect.reversible, c.idempotency.mode) == ("destructive", False, "natural")
    assert retry_policy_for(c.effect, c.idempotency).basis == "natural_idempotent"
    assert confirmation_for(c.effect, c.idempotency).required


def test_a_post_search_is_a_natural_read() -> None:
    c = classify_operation(
        method="POST", path="/rest/api/3/search/jql", operation_id="searchForIssuesUsingJqlPost", summary=None
    )
    assert (c.effect.kind, c.effect.action, c.idempotency.mode) == ("read", "search", "natural")


def test_a_post_with_a_declared_mutation_verb_stays_a_mutation() -> None:
    c = classify_operation(method="POST", path="/applications/filter", operation_id="createSavedFilter", summary=None)
    assert (c.effect.kind, c.effect.action, c.effect.resource) == ("mutation", "create", "filter")


def test_validate_and_simulate_posts_stay_mutations() -> None:
    validate = classify_operation(method="POST", path="/orders/validate", operation_id=None, summary=None)
    assert (validate.effect.kind, validate.effect.action) == ("mutation", "validate")
    simulate = classify_operation(method="POST", path="/orders/simulate", operation_id=None, summary=None)
    assert (simulate.effect.kind, simulate.effect.action) == ("mutation", "simulate")


def test_put_status_and_post_export_never_flip_to_reads() -> None:
    put = classify_operation(method="PUT", path="/jobs/{id}/status", operation_id="setStatus", summary=None)
    assert put.effect.kind == "mutation"
    export = classify_operation(method="POST", path="/reports/export", operation_id="exportSearch", summary=None)
    assert export.effect.kind == "mutation"


def test_comms_words_are_high_risk_and_confirm() -> None:
    c = classify_operation(method="POST", path="/chat.postMessage", operation_id="chat_postMessage", summary=None)
    assert (c.effect.risk, c.effect.action) == ("high", "send")
    assert confirmation_for(c.effect, c.idempotency).reason == "This operation is an unsafe high mutation."


def test_comms_risk_words_match_inside_longer_words_as_the_original_does() -> None:
    unpublish = classify_operation(
        method="POST", path="/sites/{id}/unpublish", operation_id="unpublishSite", summary=None
    )
    assert unpublish.effect.risk == "high"
    resend = classify_operation(method="POST", path="/invites/{id}/resend", operation_id=None, summary=None)
    assert resend.effect.risk == "high"


def test_a_plain_post_is_a_medium_mutation() -> None:
    c = classify_operation(method="POST", path="/widgets", operation_id="createWidget", summary=None)
    assert (c.effect.risk, c.effect.reversible, c.effect.action) == ("medium", True, "create")
    assert confirmation_for(c.effect, c.idempotency).required  # idempotency none


def test_a_put_mutation_that_is_natural_and_reversible_does_not_confirm() -> None:
    c = classify_operation(method="PUT", path="/widgets/{id}", operation_id=None, summary=None)
    assert (c.effect.action, c.idempotency.mode) == ("replace", "natural")
    assert not confirmation_for(c.effect, c.idempotency).required


def test_a_forced_mutation_on_a_post_search_is_reclassified() -> None:
    c = classify_operation(
        method="POST", path="/issues/search", operation_id="searchIssues", summary=None, forced_kind="mutation"
    )
    assert (c.effect.kind, c.effect.action, c.effect.risk, c.effect.reversible) == (
        "mutation",
        "create",
        "medium",
        True,
    )
    assert c.idempotency.mode == "none"
    retries = retry_policy_for(c.effect, c.idempotency)
    assert (retries.mode, retries.basis, retries.max_attempts) == ("none", "unproven", 1)
    confirmation = confirmation_for(c.effect, c.idempotency)
    assert (confirmation.required, confirmation.risk) == (True, "medium")


def test_an_asserted_read_post_retries_like_a_get() -> None:
    c = classify_operation(method="POST", path="/graphql", operation_id="query", summary=None, forced_kind="read")
    assert c.effect.kind == "read"
    assert retry_policy_for(c.effect, c.idempotency).basis == "read_safe"


def test_without_a_method_the_kind_decides_fixed_defaults() -> None:
    read = classify_operation(method=None, path="/x", operation_id=None, summary=None, forced_kind="read")
    assert (read.effect.action, read.effect.risk, read.effect.reversible, read.idempotency.mode) == (
        "list",
        "none",
        True,
        "natural",
    )
    write = classify_operation(method=None, path="/x", operation_id=None, summary=None)
    assert (write.effect.kind, write.effect.action, write.effect.risk, write.idempotency.mode) == (
        "mutation",
        "other",
        "medium",
        "none",
    )


def test_keyed_modes_retry_on_the_idempotency_key_basis() -> None:
    effect = Effect(kind="mutation", risk="financial", reversible=False)
    for mode in ("required", "key_supported"):
        assert retry_policy_for(effect, Idempotency(mode=mode)).basis == "idempotency_key"  # type: ignore[arg-type]
    assert retry_policy_for(effect, Idempotency(mode="client_id")).basis == "natural_idempotent"


def make_op(
    *,
    kind: str = "read",
    action: str = "list",
    params: tuple[Param, ...] = (),
    body: RequestBody | None = None,
    long_running: bool = False,
) -> Operation:
    return Operation(
        id="svc.things.list",
        canonical_name="list_thing",
        display_name="List things",
        effect=Effect(kind=kind, action=action),  # type: ignore[arg-type]
        input=Input(params=params, body=body),
        idempotency=Idempotency(mode="natural"),
        retries=RetryPolicy(mode="safe"),
        long_running=long_running,
        cli=Cli(command="svc things list"),
        mcp=Mcp(tool_name="svc_list_thing"),
    )


def test_archetypes_follow_the_effect_and_long_running_dominates() -> None:
    assert archetype_for(make_op()) == "search"
    assert archetype_for(make_op(action="get")) is None
    assert archetype_for(make_op(kind="mutation", action="create")) == "transaction"
    assert archetype_for(make_op(kind="mutation", action="create", long_running=True)) == "long_running"


def test_query_language_inputs_are_passthrough_only_when_unconstrained() -> None:
    for name in ("sql", "JQL", "cql", "kql", "xpath", "dsl", "where", "expression"):
        assert archetype_for(make_op(params=(Param(name=name, in_="query"),))) == "query_passthrough", name
    constrained = Param(name="sql", in_="query", schema={"type": "string", "maxLength": 100})
    assert archetype_for(make_op(params=(constrained,))) == "search"
    number = Param(name="where", in_="query", schema={"type": "integer"})
    assert archetype_for(make_op(params=(number,))) == "search"
    assert archetype_for(make_op(params=(Param(name="q", in_="query"),))) == "search"
    fields = (BodyField(name="query", schema={"type": "string"}),)
    body = RequestBody(
        schema={"type": "object", "properties": {"query": {"type": "string"}}}, projection="fields", fields=fields
    )
    assert archetype_for(make_op(body=body)) == "query_passthrough"
    enum_fields = (BodyField(name="filter", schema={"type": "string", "enum": ["a"]}),)
    enum_body = RequestBody(schema={"type": "object"}, projection="fields", fields=enum_fields)
    assert archetype_for(make_op(body=enum_body)) == "search"


def test_a_whole_object_body_with_a_query_property_is_not_passthrough() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}, "options": {"type": "object"}}}
    body = RequestBody(schema=schema, projection="whole")
    assert archetype_for(make_op(body=body)) == "search"
