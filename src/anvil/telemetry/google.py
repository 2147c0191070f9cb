"""``ANVIL_OTEL_EXPORTER=cloud_trace``: OTLP to Google's telemetry endpoint, as the runtime's own identity.

Traces go to ``https://telemetry.googleapis.com/v1/traces`` and metrics to ``.../v1/metrics`` (the Telemetry
(OTLP) API), authenticated with Application Default Credentials: on Cloud Run, the service's runtime service
account, which the generated Terraform grants ``roles/cloudtrace.agent`` and ``roles/monitoring.metricWriter``.
Every resource carries ``gcp.project_id`` (the API requires it): ``OTEL_RESOURCE_ATTRIBUTES`` may name it,
else it is the credentials' project. No Google SDK for tracing is used: only ``google-auth`` for the token.

:class:`GoogleAuth` hands the export thread a fresh ``authorization`` header per request (refreshing the
token when it expires) and ``x-goog-user-project``: called by the span sink per batch, and as a
``requests`` auth hook on the session the SDK's OTLP/HTTP metric exporter sends with
(:meth:`GoogleAuth.session`); :func:`google_credentials` finds the
credentials. Both take their inputs as arguments, so the configuration is tested offline with credentials of
the test's own.
"""

from __future__ import annotations

import threading
from typing import Any, Final

__all__ = ["METRICS_PATH", "SCOPES", "TELEMETRY_ENDPOINT", "TRACES_PATH", "GoogleAuth", "google_credentials"]

#: Google's OTLP endpoint.
TELEMETRY_ENDPOINT: Final = "https://telemetry.googleapis.com"
TRACES_PATH: Final = "/v1/traces"
METRICS_PATH: Final = "/v1/metrics"
#: The OAuth scopes the runtime identity's token carries.
SCOPES: Final = ("https://www.googleapis.com/auth/cloud-platform",)


def google_credentials() -> tuple[Any, str | None]:
    """Application Default Credentials with :data:`SCOPES`, and their project (None when unknown).

    Raises:
        google.auth.exceptions.DefaultCredentialsError: there are none here.
    """
    import google.auth

    credentials, project = google.auth.default(scopes=list(SCOPES))
    return credentials, project


class GoogleAuth:
    """Headers for one export request: a bearer token of ``credentials`` (refreshed when expired) and the
    quota project. Thread-safe (the metric and span exports may overlap).

    Args:
        credentials: ``google.auth`` credentials.
        project: The project the telemetry is written to.
        request: A ``google.auth.transport.Request`` to refresh with (default: a requests-based one).
    """

    def __init__(self, credentials: Any, project: str, request: Any = None) -> None:
        if request is None:  # imported here, not on the export thread (see anvil.telemetry.pipeline)
            from google.auth.transport.requests import Request

            request = Request()
        self.credentials = credentials
        self.project = project
        self._request = request
        self._lock = threading.Lock()

    def __call__(self) -> dict[str, str]:
        """``authorization`` and ``x-goog-user-project``."""
        with self._lock:
            if not self.credentials.valid:
                self.credentials.refresh(self._request)
            headers: dict[str, str] = {}
            self.credentials.apply(headers)
        headers["x-goog-user-project"] = self.project
        return headers

    def __repr__(self) -> str:
        return f"GoogleAuth(project={self.project!r})"

    def session(self) -> Any:
        """A ``requests`` session whose every request carries these headers, fresh (the SDK's OTLP/HTTP
        metric exporter takes it): ``requests`` calls the session's ``auth`` hook as it prepares each request,
        the exporter's retries included."""
        import requests
        import requests.auth

        headers = self

        class Bearer(requests.auth.AuthBase):
            def __call__(self, request: Any) -> Any:
                request.headers.update(headers())
                return request

        session = requests.Session()
        session.auth = Bearer()
        return session
