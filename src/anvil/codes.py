"""The registry of every code an operator or client can see.

Three kinds share one namespace:

* ``diagnostic``: compile-time findings (``Diagnostic.code``) with a default severity;
* ``error``: runtime error-envelope codes (``error.code``, the 16-code taxonomy) and fault codes
  carried by :class:`anvil.errors.AnvilError`;
* ``detail``: sub-codes carried in ``error.details.code`` (``effect/*``, ``policy/*``, ...).

Adding, renaming or removing a code is a deliberate public-contract change:
``tests/test_codes.py`` fails when a code is emitted but not registered, or registered but asserted
by no test. Sections are per pipeline stage; keep entries sorted within a section.
"""

from __future__ import annotations

from typing import Final, Literal

from anvil._dataclass import dataclass

__all__ = ["CODES", "Code", "CodeKind", "Severity", "code_info", "is_registered"]

Severity = Literal["error", "warning", "info"]
CodeKind = Literal["diagnostic", "error", "detail"]


@dataclass(frozen=True, slots=True)
class Code:
    """One registered code."""

    name: str
    kind: CodeKind
    summary: str
    severity: Severity | None = None


def _d(name: str, severity: Severity, summary: str) -> Code:
    return Code(name, "diagnostic", summary, severity)


def _e(name: str, summary: str) -> Code:
    return Code(name, "error", summary)


def _x(name: str, summary: str) -> Code:
    return Code(name, "detail", summary)


_ENTRIES: tuple[Code, ...] = (
    # --- load/: reading the source spec -------------------------------------------------------
    _d("source/not_found", "error", "The spec file does not exist or cannot be read."),
    _d("source/parse_error", "error", "The spec is not valid YAML or JSON."),
    _d("source/not_openapi", "error", "The document is not OpenAPI 3.0/3.1 or Swagger 2.0."),
    _d("source/unsupported_version", "error", "The OpenAPI/Swagger version is not supported."),
    _d("source/ref_missing", "error", "A $ref names nothing in the document or file it points to."),
    _d("source/external_ref", "error", "A $ref points at a URL; Anvil never fetches over the network."),
    _d("source/path_escape", "error", "A $ref points at a file outside the spec's folder."),
    _d("source/ref_invalid", "error", "A $ref is not a string or not a well-formed reference."),
    _d("source/no_operations", "warning", "The spec declares no operations."),
    _d("schema_cycle_truncated", "warning", "A recursive anonymous schema was cut to a stub."),
    # bounded reads of spec and manifest files: a hostile file never stalls the compiler or fills its memory
    _d("source/not_regular_file", "error", "A spec or $ref file is not a regular file (a FIFO, device, folder)."),
    _d("source/too_large", "error", "A spec or $ref file is larger than the per-file limit."),
    # a line break in an operationId could write manifest keys into the comment anvil init shows it in
    _d("source/control_character", "error", "A path or operationId holds a control or line-separator character."),
    _d("source/too_deep", "error", "A spec file, or its schemas once refs are followed, nest deeper than Anvil walks."),
    # --- compiler/: normalize -------------------------------------------------------------------
    _d("header_param_ignored", "info", "An Accept/Content-Type/Authorization header parameter is runtime-owned."),
    _d("operation_malformed", "warning", "An operation object is not a mapping and was skipped."),
    _d("operation_not_compiled", "warning", "A spec operation (OPTIONS, TRACE, QUERY) is not compiled into a tool."),
    _d("auth/alternative_selected", "warning", "Several auth alternatives; the first was selected."),
    _d("auth/alternatives_unmodeled", "warning", "Auth alternatives that do not resolve to one principal."),
    _d("auth/api_key_carrier_missing", "warning", "An apiKey scheme without a usable carrier."),
    # a composite needs every factor to be static material (api_key, basic, bearer) in a wire slot of its own
    _d("auth/composite_unmodeled", "warning", "Several schemes at once (AND) that a composite cannot carry."),
    _d("auth/end_user_flow_unexecutable", "warning", "An end-user OAuth flow the runtime cannot execute."),
    _d("auth/http_scheme_unsupported", "warning", "An HTTP auth scheme other than basic or bearer."),
    _d("auth/oauth_flow_ambiguous", "warning", "An OAuth2 scheme with zero or several flows."),
    _d("auth/oauth_flow_unsupported", "warning", "An OAuth2 flow the runtime does not support."),
    _d("auth/scheme_missing", "warning", "A security requirement names an undeclared scheme."),
    _d("auth/scheme_unsupported", "warning", "A security scheme of an unsupported type."),
    # a relative OAuth2 tokenUrl with no absolute server URL to resolve it against
    _d("auth/token_url_unresolved", "warning", "A relative OAuth2 tokenUrl that no server URL resolves."),
    # --- compiler/: service auth, naming, overlays, workflows ----------------------------------
    _d("auth/service_oauth2_ambiguous", "error", "Service auth type 'oauth2' is ambiguous."),
    _d("auth/end_user_flow_remodeled", "info", "An end-user flow was remodeled as on-behalf-of."),
    _d("auth/service_default_not_applied", "info", "The service auth default differs from the source's."),
    _d("auth/incoherent", "warning", "An auth contract that is incoherent or not executable; blocked."),
    # the manifest's auth.scheme: which operations a chosen scheme serves and which it unblocked
    _d("auth/scheme_chosen", "info", "A manifest-chosen security scheme serves operations; says which it unblocked."),
    _d("auth/override", "warning", "A reviewed override serves operations unlike the spec's security says."),
    _d("naming_collision_resolved", "info", "Two operations derived one name; a suffix was added."),
    _d("weak_operation_name", "info", "The derived operation name has low confidence."),
    _d("overlay/loosen_refused", "warning", "An overlay tried to loosen a safety predicate without authority."),
    _d("overlay/resolved_by_order", "info", "Overlays disagreed on a non-safety predicate; the leader won."),
    _d("overlay/conflict", "error", "Authoritative overlays disagree on a safety predicate; blocked."),
    _d("workflow_step_unresolved", "error", "A workflow step names no operation."),
    _d("workflow_mutation_unapproved", "warning", "A workflow mutation step is not approved."),
    _d("workflow_capability_unresolved", "warning", "A workflow's capability cannot be resolved."),
    # --- compiler/: validation (original-core §3.6) --------------------------------------------
    _d("duplicate_operation_id", "error", "Two operations share an id."),
    _d("duplicate_tool_name", "error", "Two operations share a tool name."),
    _d("duplicate_cli_command", "error", "Two operations share a CLI command."),
    _d("duplicate_agent_input_name", "error", "Two wire inputs map to one public input; blocked."),
    _d("input_renamed", "info", "A wire input is published under another name: its own collided with one."),
    _d("unsupported_idempotency_carrier", "error", "The declared idempotency key cannot be injected; blocked."),
    _d("unsupported_idempotency_carrier_schema", "error", "The key carrier's schema cannot hold a key; blocked."),
    _d("idempotency_auth_carrier_conflict", "error", "The key carrier is the credential carrier; blocked."),
    _d("unsafe_retry", "error", "A mutation without idempotency was marked retry-safe; retries off."),
    _d("unproven_idempotency", "warning", "A mutation with no proven idempotency; confirmation required."),
    _d("missing_confirmation", "error", "A financial/destructive mutation without confirmation; forced on."),
    _d("empty_retry_conditions", "warning", "Retries enabled with no conditions; retries off."),
    _d("no_declared_scopes", "info", "An authenticated mutation without scopes."),
    _d(
        "query_language_passthrough",
        "error",
        "An input passes a query language through without a policy; blocked (a warning when not approved).",
    ),
    _d("form_body_not_object", "warning", "A form body whose schema is not an object of named parts; blocked."),
    _d("schema/pattern_loosened", "warning", "A pattern the linear-time matcher checks only loosely, or not at all."),
    # servers an operation (or its path item) declares for itself
    _d(
        "server/operation_server",
        "info",
        "An operation is sent to its own server, not the service's (a warning when on another host).",
    ),
    # https://status.example.net,com,net,io would admit every .com once joined into an allowlist
    _d("server/invalid_host", "error", "A server's host is not a host name or IP address; never called, blocked."),
    _d("server/unresolved", "error", "An operation's own server has no absolute URL (a variable, relative); blocked."),
    # --- compiler/: the manifest (anvil.yaml) ---------------------------------------------------
    _d("manifest/not_found", "error", "The manifest file does not exist or cannot be read."),
    _d("manifest/parse_error", "error", "The manifest is not valid YAML."),
    _d("manifest/unknown_key", "error", "The manifest has a key Anvil does not know."),
    _d("manifest/wrong_type", "error", "A manifest value has the wrong type or is not an allowed value."),
    _d("manifest/unknown_operation", "error", "A manifest operation key names no operation."),
    _d("manifest/ambiguous_operation", "error", "A manifest operation key names several operations."),
    _d("manifest/auth_scheme_unknown", "error", "A manifest auth.scheme names no security scheme of the spec."),
    _d("manifest/auth_scheme_not_offered", "error", "A manifest auth.scheme is not one the operation offers."),
    _d("manifest/auth_override_unmarked", "error", "A manifest auth changes a scheme's type without override: true."),
    _d("manifest/unknown_input", "error", "A manifest inputs: key names no input of the operation, or several."),
    _d("manifest/operation_not_compiled", "warning", "A manifest entry names an operation that is not compiled."),
    _d("manifest/unknown_capability", "error", "A manifest capability review names no discovered capability."),
    _d("manifest/not_editable", "error", "anvil approve: a pattern names no entry, or an entry cannot be edited."),
    _d("manifest/secret_value", "error", "The manifest appears to contain a secret value."),
    # a state-changing method approved as a read only by its name
    _d("manifest/heuristic_read_approved", "warning", "A POST/PUT/PATCH/DELETE read only by its name is approved."),
    # --- compiler/: effect contracts (ADR-0030 §3) -----------------------------------------------
    _d("effect/class_on_read", "error", "A read declares a class other than read."),
    _d("effect/read_class_on_mutation", "error", "A mutation declares class read."),
    _d("effect/class_conflicts_reversible", "error", "The declared class disagrees with reversible."),
    _d("effect/reversible_without_inverse", "error", "Class reversible without an inverse."),
    _d("effect/compensable_without_compensate", "error", "Class compensable without a compensation."),
    _d("effect/inverse_on_non_reversible", "error", "An inverse on a class that is not reversible."),
    _d("effect/compensate_on_class", "error", "A compensation on a class neither compensable nor reversible."),
    _d("effect/lookup_on_read", "error", "A lookup on a read."),
    _d("effect/draft_on_read", "error", "A draft form on a read."),
    _d("effect/operation_missing", "error", "A follow-up names an operation not in the service."),
    _d("effect/operation_self", "error", "A follow-up other than the draft names the operation itself."),
    _d("effect/follow_up_is_read", "error", "An inverse/compensation/draft target is not a mutation."),
    _d("effect/lookup_not_read", "error", "A lookup target is not a read."),
    _d("effect/operation_not_approved", "warning", "A follow-up target is not approved."),
    _d("effect/mapping_sets_safety_control", "error", "A mapping sets confirm or the idempotency key."),
    _d("effect/mapping_unknown_argument", "error", "A mapping names an argument the target does not take."),
    _d("effect/mapping_missing_required", "error", "A required target input is not mapped."),
    _d("effect/mapping_required_optional", "error", "A required target input is mapped from an optional path."),
    _d("effect/mapping_type_mismatch", "error", "A mapped value's type cannot go into the target input."),
    _d("effect/path_invalid", "error", "A mapping source does not parse."),
    _d("effect/path_root_not_allowed", "error", "A path reads a root its place does not allow."),
    _d("effect/path_unresolved", "error", "A path names something the schema does not declare."),
    _d("effect/path_unverified", "info", "A path cannot be checked against an open schema."),
    _d("effect/deadline_shape", "error", "A deadline has both or neither of within_ms and at."),
    _d("effect/deadline_path", "error", "deadline.at is not a response path."),
    _d("effect/draft_handle", "error", "draft.handle is not a response path."),
    _d("effect/lookup_without_idempotency_key", "error", "A lookup by key on an operation that sends no key."),
    _d("effect/lookup_key_unused", "error", "A lookup by key that maps no argument from idempotency_key."),
    _d("effect/confirmation_for_draft", "warning", "The draft form needs confirmation, so the operation does."),
    # --- compiler/: disclosure (original-core §3.7) ------------------------------------------------
    _d("capability_tool_budget_waived", "info", "A tool over the tool budget is waived by its capability's review."),
    _d("disclosure/input_over_budget", "warning", "A tool is over the tool budget before any output schema."),
    # --- bundle/ and cli/ -------------------------------------------------------------------------
    _d("bundle/out_unwritable", "error", "The output directory cannot be written."),
    _d("bundle/out_not_bundle", "error", "The output directory holds files that are not an Anvil bundle."),
    _d("bundle/out_unsafe", "error", "The output path is a root, the working directory, a symlink or a repo."),
    _d("bundle/path_unsafe", "error", "A generated path is absolute, escapes the bundle or collides with another."),
    _d(
        "bundle/runtime_unavailable",
        "error",
        "The running Anvil or its image dependency lock cannot be packaged into the bundle's image.",
    ),
    _d("bundle/backup_not_removed", "warning", "The new bundle is installed but the previous one was not deleted."),
    _d("cli/invalid_service_id", "error", "The --service value is not a valid service id."),
    # anvil compile --deployment-namespace
    _d("cli/invalid_deployment_namespace", "error", "The --deployment-namespace value is not provider-safe."),
    # the Python client's own refusals (error.details.code)
    _x("client/unknown_tool", "The gateway serves no tool by that name (a JSON-RPC invalid-params answer)."),
    _x("client/jsonrpc_error", "The gateway answered the request with a JSON-RPC error."),
    _x("client/ambiguous_tool", "Several fleet-prefixed tools end in the requested tool name."),
    _x("client/invalid_structured_content", "A result the official client refused against the outputSchema."),
    # --- runtime error-envelope codes (original-core §5.7) ----------------------------------------
    _e("validation_error", "Input is missing, malformed or refused upstream as invalid."),
    _e("schema_mismatch", "Reserved: the upstream answered with a shape the contract does not allow."),
    _e("confirmation_required", "The operation needs confirm=true."),
    _e("idempotency_required", "The operation needs an idempotency key."),
    _e("auth_required", "Credentials are missing or were refused."),
    _e("permission_denied", "The upstream refused the caller (403)."),
    _e("policy_denied", "A policy (host allowlist, grant, scope, budget) refused the call."),
    _e("unsafe_retry_blocked", "Reserved: a retry was refused as unsafe."),
    _e("idempotency_ledger_unavailable", "The durable idempotency ledger is missing or failed."),
    _e("unsupported_operation", "The operation cannot be executed as compiled (state, bounds, carrier)."),
    _e("not_found", "The upstream answered 404/410."),
    _e("conflict", "The upstream answered 409, or the ledger refused a key reuse or a key in progress."),
    _e("rate_limited", "The upstream answered 429."),
    _e("upstream_timeout", "The upstream timed out (408/504/transport timeout)."),
    _e("upstream_unavailable", "The upstream is unavailable (502/503/transport failure)."),
    _e("unknown_upstream_error", "Any other upstream failure."),
    # --- operator-facing fault codes (AnvilError.code) --------------------------------------------
    _e("air/invalid", "An AIR document does not load."),
    _e("bundle/invalid", "A bundle directory is missing or malformed."),
    _e("config/invalid", "A configuration value cannot be used."),
    # an ANVIL_ALLOWED_HOSTS[_<ID>] / ANVIL_CREDENTIAL_HOSTS entry with a port, scheme, wildcard or comma junk
    _e("config/invalid_host", "A host list entry is not a host name or IP address; refused at start-up."),
    # anvil serve: an approved operation's own server is outside the allowed hosts (never redirected)
    _e("config/server_not_allowed", "An operation's own server is outside the allowed hosts; refused at start-up."),
    _e("cli/unknown_operation", "anvil run: the words name no operation of the bundle (exit 1)."),
    _e("cli/usage", "A command-line argument is missing or malformed."),
    # anvil init reads back what it would write; a spec string that would change an entry is never written
    _e("manifest/draft_unsafe", "anvil init: the manifest would not read back as written; nothing was written."),
    _e("internal_error", "An unexpected fault; reported without a traceback."),
    # proof lanes: the live conformance config (original-core §8.3)
    _e("proof/live_config_invalid", "A conformance --live config is malformed or names no approved read."),
    _e("proof/live_mutation_refused", "A conformance --live config names a mutation; the live lane never writes."),
    # --- deploy/: anvil deploy ledger refusals (exit 1, nothing on stdout) --------------------------
    _e("deploy/air_invalid", "The bundle's air.json does not load as AIR."),
    _e("deploy/bundle_not_found", "The bundle path does not exist (ENOENT)."),
    _e("deploy/bundle_symlink", "The bundle holds a symlink; a hash cannot bind a mutable link target."),
    _e("deploy/contract_corrupt", "deploy/idempotency-store.json is not valid JSON or not schema version 1."),
    _e("deploy/contract_missing", "deploy/idempotency-store.json is missing."),
    _e("deploy/contract_stale", "The store contract or a compiler-owned byte differs from a fresh projection."),
    _e("deploy/dedicated_default_database", "Dedicated mode with --database (default)."),
    _e("deploy/dedicated_requires_database", "Dedicated mode without --database."),
    _e("deploy/dedicated_requires_location", "Dedicated mode without --location."),
    _e("deploy/invalid_database", "--database is not (default) or a 4-63 character Firestore database id."),
    _e("deploy/invalid_database_mode", "--database-mode is not shared or dedicated."),
    _e("deploy/invalid_location", "--location is not a Firestore location id."),
    _e("deploy/invalid_project", "--project is not a lowercase 6-30 character GCP project id."),
    _e("deploy/invalid_ttl", "--ttl-seconds is not an integer from 60 to 31536000."),
    _e("deploy/no_air", "The bundle directory holds no air.json."),
    _e("deploy/output_conflict", "--json and --tfvars were both given."),
    _e("deploy/shared_location", "--location in shared mode."),
    _e("deploy/tfvars_unresolved", "--tfvars for a Firestore bundle without --project and --database."),
    # --- runtime/ and ledger/: idempotency ledger faults (LedgerError.code) -----------------------
    _e("ledger/corrupt_row", "A ledger row or result is malformed (status, expiry, non-2xx, not JSON)."),
    _e("ledger/not_owner", "This process does not own the reservation it tried to complete."),
    _e("ledger/result_too_large", "A replay result exceeds the 819,200-byte ceiling; the row stays in progress."),
    _e("ledger/unavailable", "The ledger backend failed or could not be reached."),
    # operator reconciliation (`anvil ledger inspect|resolve`)
    _e("ledger/reference_invalid", "A ledger reference is not <backend>/<table>/<64 hex>; the store was not touched."),
    _e("ledger/wrong_collection", "A ledger reference names another backend's or namespace's rows than --ledger."),
    _e("ledger/row_missing", "No ledger row has this reference; nothing was changed."),
    _e("ledger/row_not_in_progress", "The row is completed or malformed, not a quarantined reservation; unchanged."),
    _e("ledger/fingerprint_mismatch", "The row's fingerprint is not the one the operator gave; nothing was changed."),
    _e("ledger/row_changed", "The row changed between the re-read and the conditional write; nothing was changed."),
    # --- serve/: inbound auth answers (WWW-Authenticate error, original-gateway §1.5) and grants ----
    _e("grant/invalid", "A grant list does not parse (original-gateway §1.7); the whole grant is refused."),
    _e("invalid_request", "The request carries no bearer token (401)."),
    _e("invalid_token", "The bearer token is unknown, malformed, expired, mis-addressed or badly signed (401)."),
    _e("turn_token_required", "A connect token (by_purpose: connect) was sent to /mcp or /call (403)."),
    # --- serve/: the fleet listener (start-up refusals, REST route and probe answers) ---------------
    _e("fleet/duplicate_bundle", "Two served bundles have the same fleet id; refused before binding."),
    _e("fleet/no_bundles", "No directory holding air.json was found under the given paths."),
    _e(
        "fleet/tool_collision",
        "One wire tool name is produced twice (two bundles, or a meta-tool or lane card named like a tool); "
        "refused before binding.",
    ),
    _e("fleet/resource_collision", "Two bundles serve a skill file under one resource URI; refused before binding."),
    # a plain credential variable two fleet bundles would read
    _e("fleet/ambiguous_credential", "Two bundles would read one plain credential variable; refused before binding."),
    # a <P>_TOKEN_ENDPOINT (or a declared endpoint admitted by ANVIL_CREDENTIAL_HOSTS) the client secret may not go to
    _e("config/token_endpoint_refused", "A token endpoint outside the allowed hosts, or not https; refused at start."),
    _e("ledger_unavailable", "/readyz: the durable ledger is required and missing, or its live read failed (503)."),
    _e("method_not_allowed", "The listener route does not answer this HTTP method (405)."),
    _e("request_too_large", "The request body is larger than the configured limit (413)."),
    _e("unsupported_media_type", "A POST body that is not application/json (415)."),
    # /mcp requests only the MCP SDK answers, when it could not be loaded (in time); it loads in the background
    # so cold start stays short (shared/spec/performance.md)
    _e(
        "mcp_unavailable",
        "The MCP SDK, loaded in the background, failed or did not load in time (503); /readyz too while it failed.",
    ),
    # --- serve/: grant refusals (error.details.code, original-gateway §1.7) ----------------------
    _x("policy/grant_confirmation_required", "A confirmation-gated operation under no entry with confirm: allow."),
    _x("policy/grant_denied", "The caller's grant names no entry allowing this operation on this connector."),
    # --- runtime/: an operation's own server on another host, sent without the service's credential ----
    _x("auth/credential_withheld", "A 401/403 from an operation's own host no one consented to give the credential."),
    # --- runtime/: OAuth2 client-credentials exchange failures (auth_required error.details.code) -----
    _x("oauth/client_auth_unsupported", "The AIR asks for a client authentication other than a client secret."),
    _x("oauth/token_answer_invalid", "The token answer is too large, a redirect, not JSON, or has no Bearer token."),
    _x("oauth/token_endpoint_refused", "The token endpoint is not an allowed host (or not https outside dev)."),
    _x("oauth/token_endpoint_unavailable", "The token endpoint timed out, could not be reached, or answered 5xx."),
    _x("oauth/token_refused", "The token endpoint refused the client (400, 401, 403)."),
    # --- serve/: effect-contract refusals in tools/call (error.details.code, ADR-0030 §5, §7) ------
    _x("effect/draft_argument_missing", "A staged call lacks a value the draft form's mapping needs."),
    _x("effect/draft_input_invalid", "The staged input does not fit the draft tool's input schema."),
    _x("effect/draft_unavailable", "The draft form's operation is not served here."),
    _x("effect/idempotency_key_conflict", "_meta.idempotency_key differs from the key in the arguments."),
    _x("effect/invalid_meta", "_meta.idempotency_key is not a non-empty string, or _meta.stage not a boolean."),
    _x("effect/no_draft_form", "_meta.stage on an operation that declares no draft form."),
    # --- serve/: the anvil_projection argument (error.details.code) ---------------------------------
    _x("projection/invalid", "anvil_projection is not a JMESPath expression the gateway evaluates; nothing ran."),
    _x("projection/failed", "anvil_projection failed on a successful answer (the effect report says what ran)."),
    # --- serve/: the meta-tools of a searched or laddered surface (error.details.code) ------------------
    _x("discovery/invalid_arguments", "A meta-tool's own input is not what its schema says; nothing was called."),
    _x("discovery/write_through_read", "anvil_call_read was asked to call a write; use anvil_call_write. Nothing ran."),
    # --- proof/: `anvil mock` answer codes (body "code") and selftest refusals (original-core §8.2) ----
    _e("already_exists", "anvil mock: a create names an id an item of that kind already has (409)."),
    _e("idempotency_key_reused", "anvil mock: an idempotency key sent again with a different request (409)."),
    _e("injected_fault", "anvil mock: the answer of a fault injected through /__anvil/fault."),
    _e("invalid_input", "anvil mock: a request that does not fit the operation's inputs (400, names the field)."),
    _e("invalid_fault", "anvil mock: a /__anvil/fault body that does not describe a fault (400)."),
    _e("invalid_seed", "anvil mock: a POST /__anvil/items body that names no kind the mock serves (400)."),
    _e("mock_full", "anvil mock: a kind holds its maximum number of items (507)."),
    _e("selftest/remote_upstream", "anvil selftest: a non-loopback --upstream without --allow-remote-sandbox."),
)

CODES: Final[dict[str, Code]] = {entry.name: entry for entry in _ENTRIES}
if len(CODES) != len(_ENTRIES):  # pragma: no cover - guards the table itself
    raise RuntimeError("duplicate code in anvil.codes")


def is_registered(name: str) -> bool:
    """True when ``name`` is a registered code."""
    return name in CODES


def code_info(name: str) -> Code:
    """Return the registry entry for ``name``.

    Raises:
        KeyError: the code is not registered (emitting it is a bug).
    """
    try:
        return CODES[name]
    except KeyError:
        raise KeyError(f"unregistered code {name!r}: add it to anvil.codes") from None
