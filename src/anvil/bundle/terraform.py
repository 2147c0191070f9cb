"""``deploy/terraform/main.tf`` (and, through :mod:`~anvil.bundle.terraform_variables`, ``variables.tf``): the
Cloud Run + Firestore ledger module (original-ledger §5).

Written in ``terraform fmt`` layout so ``terraform fmt -check`` passes on the emitted bytes. The ledger
wiring (marked [L] in the spec) appears only when the store contract is the Firestore variant:

* shared mode references the exact existing database through ``var.ledger_database_id`` and never
  creates or imports it; dedicated mode creates it (``count``), delete-protected, ``prevent_destroy``,
  ``deletion_policy = "ABANDON"``;
* TTL on ``expires_at`` and the disabled single-field indexes, both ``ABANDON`` so a later revision
  without the ledger detaches without deleting evidence;
* ``roles/datastore.user`` conditioned on that one database;
* Cloud Run with ``ANVIL_LEDGER``, the retention variable, a 600 s request deadline, ``/readyz`` as the
  startup probe and deliberately no liveness probe, depending on the IAM and TTL resources;
* the plan recomputes the ledger input digest (original-ledger §4.6) and fails on a mismatch or a
  deploying project other than the reviewed one.

Every variant refuses, as a hard plan failure, ``var.env`` / ``credential_secret_refs`` keys that shadow a
compiler-owned setting or a runtime control the deployment fixes, or appear in both maps. Both sets come
from :mod:`anvil.air.runtime_env`, the registry of the variables the runtime reads.
"""

from __future__ import annotations

from collections.abc import Mapping

from anvil.air.canonical import sha256_hex
from anvil.air.model import Document
from anvil.air.runtime_env import names_owned_by, prefixes_owned_by
from anvil.bundle.container import runtime_artifact_hash
from anvil.bundle.coordinates import Coordinates, coordinates
from anvil.bundle.encoding import text_file
from anvil.bundle.generation import Generation
from anvil.bundle.store import STORE_CONTRACT_PATH
from anvil.bundle.terraform_variables import HEADER, VARIABLES_TF_PATH, variables_tf

__all__ = [
    "COMPILER_OWNED_ENV",
    "FIXED_RUNTIME_ENV",
    "FIXED_RUNTIME_ENV_PREFIXES",
    "MAIN_TF_PATH",
    "REQUEST_TIMEOUT_SECONDS",
    "VARIABLES_TF_PATH",
    "emit_terraform",
]

MAIN_TF_PATH = "deploy/terraform/main.tf"
#: Cloud Run request deadline: the 230 s upstream/retry ceiling plus the bounded Firestore
#: reservation and completion path, with more than 100 s left for credentials, hooks and delivery.
REQUEST_TIMEOUT_SECONDS = 600
#: Runtime settings only the compiler sets; external maps may not redefine them.
COMPILER_OWNED_ENV: tuple[str, ...] = names_owned_by("compiler")
#: Runtime controls the reviewed deployment leaves at their defaults (retention, timeouts, allowlists):
#: every one the runtime reads and the registry marks fixed, so a new control is refused once registered.
FIXED_RUNTIME_ENV: tuple[str, ...] = names_owned_by("fixed")
#: Per-bundle variable prefixes of fixed controls (``ANVIL_ALLOWED_HOSTS_<ID>``).
FIXED_RUNTIME_ENV_PREFIXES: tuple[str, ...] = prefixes_owned_by("fixed")


def _sub(template: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    return template


_TERRAFORM = """\
terraform {
  backend "gcs" {}

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 7.33.0, < 8.0.0"
    }
  }
}

provider "google" {
  project = var.project_id
  region  = var.region
}
"""

_LOCALS_OWNED = """\
  # Runtime settings only the compiler sets: var.env and credential_secret_refs may not redefine them.
  anvil_compiler_owned_runtime_env_names = toset([
@OWNED@
  ])

  # Runtime controls the reviewed deployment leaves at their defaults, by name and by per-bundle prefix:
  # external maps may not set them either.
  anvil_fixed_runtime_env_names = toset([
@FIXED@
  ])
  anvil_fixed_runtime_env_prefixes = [
@PREFIXES@
  ]

  anvil_env_shadowing         = [for name in keys(var.env) : name if contains(setunion(local.anvil_compiler_owned_runtime_env_names, local.anvil_fixed_runtime_env_names), name) || anytrue([for prefix in local.anvil_fixed_runtime_env_prefixes : startswith(name, prefix)])]
  anvil_secret_refs_shadowing = [for name in keys(var.credential_secret_refs) : name if contains(setunion(local.anvil_compiler_owned_runtime_env_names, local.anvil_fixed_runtime_env_names), name) || anytrue([for prefix in local.anvil_fixed_runtime_env_prefixes : startswith(name, prefix)])]
"""

_LOCALS_LEDGER = """\

  # Shared mode references the exact existing database; dedicated mode uses the one created below.
  ledger_database_id = var.ledger_database_mode == "dedicated" ? google_firestore_database.ledger[0].name : var.ledger_database_id

  # The reviewed-input digest of `anvil deploy ledger --tfvars`, recomputed from the plan's own inputs.
  ledger_deployment_input_digest = sha256(jsonencode({
    bundle_hash           = var.anvil_bundle_hash
    database_id           = var.ledger_database_id
    database_mode         = var.ledger_database_mode
    expected_project_id   = var.anvil_expected_project_id
    location              = var.ledger_location
    namespace             = "@NAMESPACE@"
    result_ttl_seconds    = var.ledger_result_ttl_seconds
    runtime_artifact_hash = "@RUNTIME_HASH@"
    schema_version        = 1
    store_contract_digest = "@STORE_DIGEST@"
  }))
"""

_IDENTITY = """\

resource "google_service_account" "runtime" {
  account_id   = "@SERVICE_NAME@"
  display_name = "Anvil runtime for @SERVICE_ID@"
}

resource "google_project_iam_member" "runtime_log_writer" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = "serviceAccount:${google_service_account.runtime.email}"
}

resource "google_project_iam_member" "runtime_trace_agent" {
  project = var.project_id
  role    = "roles/cloudtrace.agent"
  member  = "serviceAccount:${google_service_account.runtime.email}"
}

resource "google_project_iam_member" "runtime_metric_writer" {
  project = var.project_id
  role    = "roles/monitoring.metricWriter"
  member  = "serviceAccount:${google_service_account.runtime.email}"
}
"""

_LEDGER_RESOURCES = """\

# Dedicated mode only: the capability's own database, never deleted by Terraform.
resource "google_firestore_database" "ledger" {
  count = var.ledger_database_mode == "dedicated" ? 1 : 0

  project                 = var.project_id
  name                    = var.ledger_database_id
  location_id             = var.ledger_location
  type                    = "FIRESTORE_NATIVE"
  delete_protection_state = "DELETE_PROTECTION_ENABLED"
  deletion_policy         = "ABANDON"

  lifecycle {
    prevent_destroy = true

    precondition {
      condition     = var.ledger_location != null
      error_message = "Dedicated mode requires ledger_location: a Firestore database location is immutable after creation."
    }

    precondition {
      condition     = var.ledger_database_id != "(default)"
      error_message = "Dedicated mode requires a named ledger_database_id, not (default)."
    }
  }
}

# The runtime addresses ledger documents by id only: disable the inherited single-field indexes.
resource "google_firestore_field" "ledger_no_single_field_indexes" {
  project         = var.project_id
  database        = local.ledger_database_id
  collection      = "@COLLECTION@"
  field           = "*"
  deletion_policy = "ABANDON"

  index_config {}
}

# Completed results expire through TTL on expires_at; in-progress reservations carry no expiry.
resource "google_firestore_field" "ledger_result_expiry" {
  project         = var.project_id
  database        = local.ledger_database_id
  collection      = "@COLLECTION@"
  field           = "expires_at"
  deletion_policy = "ABANDON"

  index_config {}

  ttl_config {}

  depends_on = [google_firestore_field.ledger_no_single_field_indexes]
}

resource "google_project_iam_member" "runtime_ledger" {
  project = var.project_id
  role    = "roles/datastore.user"
  member  = "serviceAccount:${google_service_account.runtime.email}"

  condition {
    title      = "anvil-@PREFIX@-ledger-only"
    expression = "resource.name == 'projects/${var.project_id}/databases/${local.ledger_database_id}'"
  }
}
"""

_SERVICE_HEAD = """\

resource "google_cloud_run_v2_service" "tools" {
  name     = "@SERVICE_NAME@"
  location = var.region
  ingress  = var.ingress

  template {
    service_account = google_service_account.runtime.email
    # 600 s covers the 230 s upstream/retry ceiling and the bounded Firestore reservation and
    # completion path, and retains more than 100s for credentials, hooks and response delivery.
    timeout = "@TIMEOUT@s"

    scaling {
      min_instance_count = var.min_instances
      max_instance_count = var.max_instances
    }

    containers {
      image = "${var.region}-docker.pkg.dev/${var.project_id}/${var.ar_repo}/@SERVICE_NAME@:${var.image_tag}"

      resources {
        limits = {
          cpu    = "1"
          memory = "512Mi"
        }
      }

      ports {
        container_port = 8080
      }
"""

_STARTUP_PROBE = """\

      # Startup waits for /readyz (a live, non-mutating ledger read). There is deliberately no
      # liveness probe: a transient store failure must not turn into a restart loop.
      startup_probe {
        initial_delay_seconds = 0
        timeout_seconds       = 12
        period_seconds        = 15
        failure_threshold     = 16

        http_get {
          path = "/readyz"
          port = 8080
        }
      }
"""

_ENV = """\

      env {
        name  = "@NAME@"
        value = @VALUE@
      }
"""

_SERVICE_TAIL = """\

      dynamic "env" {
        for_each = var.env
        content {
          name  = env.key
          value = env.value
        }
      }

      dynamic "env" {
        for_each = var.credential_secret_refs
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = "projects/${coalesce(var.secret_project, var.project_id)}/secrets/${env.value}"
              version = "latest"
            }
          }
        }
      }
    }
  }

  lifecycle {
    precondition {
      condition     = length(local.anvil_env_shadowing) == 0
      error_message = "var.env may not redefine compiler-owned ANVIL runtime settings."
    }

    precondition {
      condition     = length(local.anvil_secret_refs_shadowing) == 0
      error_message = "credential_secret_refs may not redefine compiler-owned ANVIL runtime settings."
    }

    precondition {
      condition     = length(setintersection(toset(keys(var.env)), toset(keys(var.credential_secret_refs)))) == 0
      error_message = "One runtime environment variable may not be supplied by both var.env and credential_secret_refs."
    }
@LEDGER_PRECONDITIONS@  }
@DEPENDS@}
"""

_LEDGER_PRECONDITIONS = """\

    precondition {
      condition     = var.anvil_expected_project_id == var.project_id
      error_message = "The reviewed ledger project does not match Cloud Build's deployment project."
    }

    precondition {
      condition     = var.anvil_ledger_input_digest == local.ledger_deployment_input_digest
      error_message = "anvil_ledger_input_digest does not match the plan's ledger inputs; regenerate them with `anvil deploy ledger --tfvars`."
    }

    precondition {
      condition     = (var.ledger_database_mode == "dedicated") == (var.ledger_location != null)
      error_message = "ledger_location is required in dedicated mode and must be null in shared mode."
    }
"""

_DEPENDS = """\

  depends_on = [google_project_iam_member.runtime_ledger, google_firestore_field.ledger_result_expiry]
"""

_ACCESS = """\

resource "google_cloud_run_v2_service_iam_member" "invokers" {
  for_each = toset(var.invoker_members)

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.tools.name
  role     = "roles/run.invoker"
  member   = each.value
}

resource "google_secret_manager_secret_iam_member" "runtime_reads_credential" {
  for_each = toset(var.credential_secret_ids)

  project   = coalesce(var.secret_project, var.project_id)
  secret_id = each.value
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.runtime.email}"
}

resource "google_cloud_run_v2_service_iam_member" "public" {
  count = var.allow_unauthenticated ? 1 : 0

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.tools.name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

output "service_url" {
  description = "The Cloud Run URL of the gateway."
  value       = google_cloud_run_v2_service.tools.uri
}
"""

_OUTPUT = """\

output "idempotency_store" {
  description = "Non-secret planned ledger coordinates and identities; compare with `anvil deploy ledger --json`. Plan evidence, not an apply receipt."
  value = {
    backend                  = "firestore"
    bundle_hash              = var.anvil_bundle_hash
    collection_group         = "@COLLECTION@"
    database                 = local.ledger_database_id
    database_mode            = var.ledger_database_mode
    deployment_artifact_hash = "@RUNTIME_HASH@"
    expected_project_id      = var.anvil_expected_project_id
    input_digest             = var.anvil_ledger_input_digest
    location                 = var.ledger_location
    namespace                = "@NAMESPACE@"
    project_id               = var.project_id
    result_ttl_seconds       = var.ledger_result_ttl_seconds
    runtime_env              = "ANVIL_LEDGER"
    runtime_uri              = "firestore://${var.project_id}/${local.ledger_database_id}/@NAMESPACE@"
    store_contract_digest    = "@STORE_DIGEST@"
  }
}
"""


def _hcl_string(text: str) -> str:
    """A quoted HCL string literal; ``${`` and ``%{`` are escaped so values never interpolate."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("${", "$${").replace("%{", "%%{")
    return f'"{escaped}"'


def _env_entries(coords: Coordinates) -> str:
    ledger_value = f'"firestore://${{var.project_id}}/${{local.ledger_database_id}}/{coords.namespace}"'
    entries = (
        ("ANVIL_SERVICE_ID", _hcl_string(coords.service_id)),
        ("ANVIL_ENV", "var.anvil_env"),
        ("ANVIL_ALLOWED_HOSTS", _hcl_string(coords.allowed_hosts)),
        ("ANVIL_AUTH_PROFILE", "var.anvil_env"),
        ("ANVIL_OTEL_EXPORTER", '"cloud_trace"'),
        ("ANVIL_LOG_FORMAT", '"json"'),
        ("ANVIL_METRICS_AUTH", '"on"'),
        ("ANVIL_LEDGER", ledger_value if coords.ledger else '""'),
        ("ANVIL_LEDGER_RESULT_TTL_SECONDS", "tostring(var.ledger_result_ttl_seconds)"),
        ("ANVIL_UPSTREAM_TIMEOUT_MS", "tostring(var.upstream_timeout_ms)"),
        ("ANVIL_CREDENTIALS", "var.credentials"),
        ("ANVIL_SECRET_PROJECT", "coalesce(var.secret_project, var.project_id)"),
    )
    return "".join(_sub(_ENV, {"NAME": name, "VALUE": value}) for name, value in entries)


def _main_tf(coords: Coordinates, runtime_hash: str, store_digest: str) -> str:
    values = {
        "SERVICE_NAME": coords.service_name,
        "SERVICE_ID": coords.service_id,
        "PREFIX": coords.prefix,
        "NAMESPACE": coords.namespace,
        "COLLECTION": coords.collection_group,
        "RUNTIME_HASH": runtime_hash,
        "STORE_DIGEST": store_digest,
        "TIMEOUT": str(REQUEST_TIMEOUT_SECONDS),
    }
    lists = {
        "OWNED": COMPILER_OWNED_ENV,
        "FIXED": FIXED_RUNTIME_ENV,
        "PREFIXES": FIXED_RUNTIME_ENV_PREFIXES,
    }
    locals_ = _sub(_LOCALS_OWNED, {key: "\n".join(f'    "{n}",' for n in names) for key, names in lists.items()})
    parts = [HEADER, "\n", _TERRAFORM, "\nlocals {\n", locals_]
    if coords.ledger:
        parts.append(_LOCALS_LEDGER)
    parts.append("}\n")
    parts.append(_IDENTITY)
    if coords.ledger:
        parts.append(_LEDGER_RESOURCES)
    parts.append(_SERVICE_HEAD)
    if coords.ledger:
        parts.append(_STARTUP_PROBE)
    parts.append(_env_entries(coords))
    parts.append(
        _sub(
            _SERVICE_TAIL,
            {
                "LEDGER_PRECONDITIONS": _LEDGER_PRECONDITIONS if coords.ledger else "",
                "DEPENDS": _DEPENDS if coords.ledger else "",
            },
        )
    )
    parts.append(_ACCESS)
    if coords.ledger:
        parts.append(_OUTPUT)
    return _sub("".join(parts), values)


def emit_terraform(doc: Document, generation: Generation, files: Mapping[str, bytes]) -> dict[str, bytes]:
    """``main.tf`` and ``variables.tf``; ``files`` are the bundle's other files (for the bound hashes).

    Raises:
        BundleError: ``bundle/invalid`` for an unusable namespace or environment.
        KeyError: the store contract or a runtime artifact file is missing from ``files`` (a bug).
    """
    coords = coordinates(doc, generation)
    main = _main_tf(coords, runtime_artifact_hash(files), sha256_hex(files[STORE_CONTRACT_PATH]))
    return {MAIN_TF_PATH: text_file(main), VARIABLES_TF_PATH: text_file(variables_tf(coords))}
