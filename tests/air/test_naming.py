"""Naming (original-core §1.5): casing, derivation, confidence, routing re-homing and collision repair."""

from __future__ import annotations

import itertools
import random

import pytest

from anvil.air.model import Cli, Effect, Idempotency, Mcp, Operation, RetryPolicy, SourceRef
from anvil.air.naming import (
    cli_flag,
    derive_names,
    kebab,
    project_routing_names,
    prop_key,
    resolve_name_collisions,
    singularize,
    snake,
)


def test_casing_splits_camel_boundaries_and_non_alphanumeric_runs() -> None:
    assert snake("HTTPStatusCode") == "http_status_code"
    assert snake("getCustomer") == "get_customer"
    assert snake("chat.postMessage") == "chat_post_message"
    assert snake("  Payments API ") == "payments_api"
    assert kebab("paymentId") == "payment-id"
    assert cli_flag("paymentId") == "--payment-id"
    assert prop_key("payment-id") == "payment_id"
    assert prop_key("$").startswith("input_")


@pytest.mark.parametrize(
    ("word", "singular"),
    [("policies", "policy"), ("addresses", "address"), ("refunds", "refund"), ("status", "status"),
     ("access", "access"), ("data", "data"), ("s", "s"), ("releases", "release"), ("statuses", "status"),
     ("responses", "response")],
)  # fmt: skip
def test_singularize_follows_the_three_rules(word: str, singular: str) -> None:
    assert singularize(word) == singular


def test_payments_names_match_the_original() -> None:
    customer = derive_names("payments", "/customers/{customer_id}", "get", "getCustomer", "Get a customer")
    assert (customer.id, customer.canonical_name, customer.command, customer.tool_name) == (
        "payments.customers.get",
        "get_customer",
        "payments customers get",
        "payments_get_customer",
    )
    assert customer.display_name == "Get a customer"
    assert customer.effect_resource == "customer"
    refund = derive_names("payments", "/payments/{payment_id}/refunds", "POST", "createRefund", None)
    assert (refund.id, refund.canonical_name, refund.command, refund.tool_name) == (
        "payments.refunds.create",
        "create_refund",
        "payments refunds create",
        "payments_create_refund",
    )
    assert refund.display_name == "Create refund"
    capture = derive_names("payments", "/payments/{payment_id}/capture", "post", "capturePayment", None)
    assert (capture.id, capture.command, capture.tool_name) == (
        "payments.capture.create",
        "payments capture create",
        "payments_capture_payment",
    )


def test_the_display_name_is_the_summary_as_written_and_a_blank_summary_falls_back() -> None:
    # OpenAI writes YAML block summaries ("summary: |"), so they end in a newline; the original keeps it.
    evals = derive_names("openai", "/evals/{eval_id}", "get", "getEval", "Get an evaluation by ID.\n")
    assert evals.display_name == "Get an evaluation by ID.\n"
    assert derive_names("openai", "/evals/{eval_id}", "get", "getEval", " \n").display_name == "Get eval"


def test_slack_rpc_paths_split_into_resource_and_action() -> None:
    names = derive_names("slack", "/chat.postMessage", "post", "chat_postMessage", None)
    assert names.id == "slack.chat.post_message"
    assert names.command == "slack chat post_message"
    assert names.canonical_name == "chat_post_message"
    nested = derive_names("slack", "/admin.apps.approve", "post", None, None)
    assert nested.id == "slack.admin_apps.approve"


def test_version_like_dotted_segments_are_not_rpc() -> None:
    assert derive_names("svc", "/v60.0", "get", None, None).id == "svc.v60_0.list"


def test_format_suffixes_and_odata_keys_are_stripped() -> None:
    twilio = derive_names("tw", "/2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json", "post", "UpdateMessage", None)
    assert twilio.id == "tw.messages.update"
    assert twilio.command == "tw Messages update"
    listing = derive_names("tw", "/2010-04-01/Accounts/{AccountSid}/Messages.json", "get", None, None)
    assert listing.id == "tw.messages.list"
    odata = derive_names("od", "/Products(1)", "get", None, None)
    assert odata.id == "od.products.get"
    assert odata.addresses_item


def test_a_trailing_vocabulary_verb_supplies_its_action_family() -> None:
    assert derive_names("jira", "/rest/api/3/field/search", "get", None, None).id == "jira.field.search"
    assert derive_names("svc", "/jobs/{job_id}/run", "post", None, None).id == "svc.jobs.execute"
    start = derive_names("netlify", "/builds/{build_id}/start", "post", "notifyBuildStart", None)
    assert (start.id, start.command) == ("netlify.builds.execute", "netlify builds execute")
    confirm = derive_names(
        "stripe", "/v1/payment_intents/{intent}/confirm", "post", "PostPaymentIntentsIntentConfirm", None
    )
    assert confirm.id == "stripe.payment_intents.approve"
    assert derive_names("github", "/repos/{owner}/{repo}/pages/health", "get", None, None).id == "github.pages.poll"
    assert derive_names("svc", "/deploys/{id}/lock", "post", None, None).id == "svc.deploys.reserve"
    assert derive_names("jira", "/rest/api/3/user/email", "get", "getUserEmail", None).id == "jira.user.send"
    post_search = derive_names("jira", "/rest/api/3/issues/search", "post", "searchIssues", None)
    assert post_search.id == "jira.issues.search"
    # A POST-search supplies the search family, whichever search word made it a read.
    parse = derive_names("jira", "/rest/api/3/jql/parse", "post", "parseJqlQueries", "Parse JQL query")
    assert parse.id == "jira.parse.search"


def test_a_read_trailing_verb_on_a_mutation_does_not_count() -> None:
    names = derive_names("svc", "/applications/filter", "post", "createSavedFilter", None)
    assert names.id == "svc.filter.create"
    assert names.effect_resource == "filter"


def test_post_search_and_operation_id_verbs_pick_the_action() -> None:
    assert derive_names("jira", "/rest/api/3/search/jql", "post", "searchForIssuesUsingJqlPost", None).id == (
        "jira.jql.search"
    )
    assert derive_names("svc", "/things/{id}", "post", "updateThing", None).id == "svc.things.update"
    assert derive_names("svc", "/things/{id}", "post", "removeThing", None).id == "svc.things.delete"
    assert derive_names("svc", "/things/{id}", "put", "upsertThing", None).id == "svc.things.upsert"
    assert derive_names("svc", "/things/{id}", "put", None, None).id == "svc.things.replace"
    assert derive_names("svc", "/things/{id}", "patch", None, None).id == "svc.things.update"
    assert derive_names("svc", "/things/{id}", "delete", None, None).id == "svc.things.delete"
    assert derive_names("svc", "/things", "get", None, None).canonical_name == "list_thing"


def test_a_path_without_concrete_segments_uses_the_service_as_resource() -> None:
    names = derive_names("svc", "/{id}", "get", None, None)
    assert names.id == "svc.svc.get"
    assert "no_resource" in names.reasons


def test_name_confidence_penalizes_generic_resources_and_vague_verbs() -> None:
    assert derive_names("svc", "/customers", "get", "listCustomers", None).confidence == 0.9
    assert derive_names("svc", "/customers", "get", None, None).confidence == 0.6
    generic = derive_names("svc", "/items", "get", None, None)
    assert generic.confidence < 0.5
    assert "generic_resource" in generic.reasons
    vague = derive_names("svc", "/transitions", "post", "doTransition", None)
    assert vague.confidence < 0.5
    assert "vague_verb" in vague.reasons


def test_routing_names_re_home_canonical_command_and_tool() -> None:
    names = project_routing_names("jira", "transitions", "apply")
    assert names.canonical_name == "apply_transition"
    assert names.command == "jira transitions apply"
    assert names.tool_name == "jira_apply_transition"


def make_op(service: str, path: str, method: str, operation_id: str | None = None) -> Operation:
    names = derive_names(service, path, method, operation_id, None)
    return Operation(
        id=names.id,
        canonical_name=names.canonical_name,
        display_name=names.display_name,
        source_ref=SourceRef(path=path, method=method, operation_id=operation_id),
        effect=Effect(kind="read"),
        idempotency=Idempotency(mode="natural"),
        retries=RetryPolicy(mode="safe"),
        cli=Cli(command=names.command),
        mcp=Mcp(tool_name=names.tool_name),
    )


def names_of(ops: tuple[Operation, ...]) -> dict[tuple[str | None, str | None], tuple[str, str, str, str]]:
    return {
        (op.source_ref.path, op.source_ref.method): (op.id, op.canonical_name, op.cli.command, op.mcp.tool_name)
        for op in ops
    }


COLLIDING = [
    make_op("svc", "/users", "get"),
    make_op("svc", "/v2/users", "get"),
    make_op("svc", "/orgs/{org}/users", "get"),
    make_op("svc", "/teams/{team}/members/{member}/users", "get"),
    make_op("svc", "/teams/{team}/users", "get"),
    make_op("svc", "/widgets/{id}", "get"),
    make_op("svc", "/widgets/{id}", "head"),
]


def test_collisions_get_path_tokens_and_clashing_suffixes_get_ordinals_never_the_method() -> None:
    ops, diagnostics = resolve_name_collisions(COLLIDING)
    names = names_of(ops)
    assert names[("/v2/users", "get")][0] == "svc.users.list.v2"
    assert names[("/orgs/{org}/users", "get")][0] == "svc.users.list.orgs"
    assert names[("/teams/{team}/users", "get")][0].startswith("svc.users.list.")
    assert names[("/widgets/{id}", "get")] == (
        "svc.widgets.get.by_id",
        "get_widget_by_id",
        "svc widgets get by_id",
        "svc_get_widget_by_id",
    )
    assert names[("/widgets/{id}", "head")][0] == "svc.widgets.get.by_id_2"
    assert names[("/users", "get")][0] == "svc.users.list.direct"
    assert {d.code for d in diagnostics} == {"naming_collision_resolved"}
    assert len({op.id for op in ops}) == len(ops)
    assert len({op.mcp.tool_name for op in ops}) == len(ops)
    assert len({op.cli.command for op in ops}) == len(ops)


def test_a_member_without_a_unique_token_uses_the_shortest_distinguishing_pair() -> None:
    ops, _ = resolve_name_collisions(
        [
            make_op("svc", "/a/b/items", "get"),
            make_op("svc", "/a/c/items", "get"),
            make_op("svc", "/d/b/c/items", "get"),
        ]
    )
    names = names_of(ops)
    assert names[("/a/b/items", "get")][0] == "svc.items.list.a_b"
    assert names[("/a/c/items", "get")][0] == "svc.items.list.a_c"
    assert names[("/d/b/c/items", "get")][0] == "svc.items.list.d"


def test_the_subset_fallback_joins_only_concrete_tokens_not_param_pseudo_tokens() -> None:
    ops, _ = resolve_name_collisions(
        [
            make_op("jira", "/rest/api/3/workflow/{entityId}", "delete"),
            make_op("jira", "/rest/api/3/workflowscheme/{id}/draft/workflow", "delete"),
            make_op("jira", "/rest/api/3/workflowscheme/{id}/workflow", "delete"),
        ]
    )
    names = names_of(ops)
    assert names[("/rest/api/3/workflowscheme/{id}/workflow", "delete")][0] == (
        "jira.workflow.delete.workflowscheme_direct"
    )
    assert names[("/rest/api/3/workflowscheme/{id}/draft/workflow", "delete")][0] == "jira.workflow.delete.draft"
    assert names[("/rest/api/3/workflow/{entityId}", "delete")][0] == "jira.workflow.delete.by_entity_id"


def test_a_last_segment_with_a_suffix_does_not_end_in_a_parameter() -> None:
    ops, _ = resolve_name_collisions(
        [
            make_op("openai", "/responses/{response_id}", "get"),
            make_op("openai", "/responses/{response_id}?beta=true", "get"),
        ]
    )
    names = names_of(ops)
    assert names[("/responses/{response_id}", "get")][0] == "openai.responses.get.by_response_id"
    assert names[("/responses/{response_id}?beta=true", "get")][0] == "openai.responses.get.direct"


def test_shared_fallback_suffixes_are_numbered_in_group_order() -> None:
    ops, _ = resolve_name_collisions(
        [
            make_op("openai", "/projects/{project_id}/roles/{role_id}", "get"),
            make_op("openai", "/organization/roles/{role_id}", "get"),
            make_op("openai", "/projects/{project_id}/users/{user_id}/roles/{role_id}", "get"),
            make_op("openai", "/organization/users/{user_id}/roles/{role_id}", "get"),
        ]
    )
    names = names_of(ops)
    assert names[("/organization/roles/{role_id}", "get")][0] == "openai.roles.get.by_role_id"
    assert names[("/projects/{project_id}/roles/{role_id}", "get")][0] == "openai.roles.get.by_role_id_2"
    assert names[("/organization/users/{user_id}/roles/{role_id}", "get")][0] == "openai.roles.get.organization_users"


def test_members_sort_as_the_original_collates_paths_punctuation_first() -> None:
    ops, _ = resolve_name_collisions(
        [
            make_op("jira", "/rest/api/3/issue/properties/{propertyKey}", "delete"),
            make_op("jira", "/rest/api/3/issue/{issueIdOrKey}/properties/{propertyKey}", "delete"),
            make_op("jira", "/rest/api/3/issue/{issueIdOrKey}/worklog/{worklogId}/properties/{propertyKey}", "delete"),
        ]
    )
    names = names_of(ops)
    assert names[("/rest/api/3/issue/{issueIdOrKey}/properties/{propertyKey}", "delete")][0] == (
        "jira.properties.delete.by_property_key"
    )
    assert names[("/rest/api/3/issue/properties/{propertyKey}", "delete")][0] == (
        "jira.properties.delete.by_property_key_2"
    )


def test_path_tokens_keep_their_case_when_members_are_compared() -> None:
    ops, _ = resolve_name_collisions(
        [
            make_op("sentry", "/api/0/organizations/{org}/scim/v2/Users", "get"),
            make_op("sentry", "/api/0/projects/{org}/{project}/users/", "get"),
        ]
    )
    names = names_of(ops)
    assert names[("/api/0/projects/{org}/{project}/users/", "get")][0] == "sentry.users.list.users"
    assert names[("/api/0/organizations/{org}/scim/v2/Users", "get")][0] == "sentry.users.list.v2"
    assert names[("/api/0/organizations/{org}/scim/v2/Users", "get")][2] == "sentry Users list v2"


def test_collision_repair_does_not_depend_on_input_order() -> None:
    expected = names_of(resolve_name_collisions(COLLIDING)[0])
    rng = random.Random(7)
    orders = [list(p) for p in itertools.islice(itertools.permutations(COLLIDING), 50)]
    for _ in range(50):
        shuffled = list(COLLIDING)
        rng.shuffle(shuffled)
        orders.append(shuffled)
    for order in orders:
        assert names_of(resolve_name_collisions(order)[0]) == expected


def test_snake_folded_id_collisions_are_repaired() -> None:
    ops, diagnostics = resolve_name_collisions(
        [
            make_op("dd", "/api/v1/Dashboard", "get", "ListDashboard"),
            make_op("dd", "/api/v2/dashboard", "get", "listDashboards"),
        ]
    )
    assert len({op.id for op in ops}) == 2
    assert diagnostics
