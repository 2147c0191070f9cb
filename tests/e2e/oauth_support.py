"""The payments example's own authorization server on loopback, for the OAuth2 client-credentials tests.

The example's mock (``examples/payments/mock_upstream.py``) runs in this process under uvicorn with one
registered client (:data:`CLIENT_ID`, :data:`SECRET`): it issues tokens at ``/oauth/token``, counts
them, and refuses with a 401 any token it did not issue or that expired. The runtime tests
(``tests/runtime/test_oauth.py``) call it through the executor; the served tests
(``tests/e2e/test_payments_oauth.py``) through a real ``anvil serve``. Both take it through the
``token_server`` and ``token_mock`` fixtures of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from anvil.air.model import Auth
from anvil.runtime.credentials import client_credentials_env, credential_profile
from tests.e2e.support import ThreadedMock, load_mock

#: The one client the mock's authorization server knows.
CLIENT_ID = "payments-gateway"
#: Its secret: no log, error, ledger row, metric or answer may ever show it.
SECRET = "e2e-client-secret-5b7e1d"
#: The token lifetime every test starts from (a test may shorten it).
LIFETIME_S = 3600


class TokenServer:
    """The payments mock with its authorization server, on a free loopback port."""

    def __init__(self) -> None:
        module = load_mock("payments")
        self.state: Any = module.State(oauth=module.OAuth(clients={CLIENT_ID: SECRET}))
        self._mock = ThreadedMock(module.create_app(self.state), "payments")

    @property
    def url(self) -> str:
        """The mock's origin (the upstream base URL; the token endpoint is ``<url>/oauth/token``)."""
        return self._mock.url

    @classmethod
    @contextmanager
    def serve(cls) -> Iterator[TokenServer]:
        """Serve until the block ends (a hanging token request is released first)."""
        server = cls()
        server._mock.start()
        try:
            yield server
        finally:
            server.state.oauth.mode = "normal"
            server._mock.stop()

    @contextmanager
    def fresh(self) -> Iterator[tuple[str, Any]]:
        """``(url, state)`` back to the seed state: no token issued, the default lifetime, mode normal
        (again when the block ends, so a test that left the endpoint hanging does not hold the next)."""
        self.state.reset()
        self.state.oauth.lifetime = LIFETIME_S
        try:
            yield self.url, self.state
        finally:
            self.state.oauth.mode = "normal"


def client_variables(auth: Auth, token_endpoint: str, *, auth_profile: str = "default") -> dict[str, str]:
    """``<P>_CLIENT_ID``, ``<P>_CLIENT_SECRET`` and ``<P>_TOKEN_ENDPOINT`` of ``auth`` under ``auth_profile``
    (the original's names), set to the mock's client and ``token_endpoint``."""
    client_id, secret, endpoint, _, _ = client_credentials_env(credential_profile(auth_profile, auth))
    return {client_id: CLIENT_ID, secret: SECRET, endpoint: token_endpoint}


def business(state: Any, path_end: str = "") -> list[dict[str, Any]]:
    """The business requests the mock saw (token requests are counted apart), those ending ``path_end``."""
    return [r for r in state.requests if r["path"].endswith(path_end)]
