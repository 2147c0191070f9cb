"""``anvil mock``: a stateful mock upstream generated from a bundle's AIR, for the proof lanes (original-core §8).

:class:`MockApi` answers an AIR document's operations from memory; :func:`create_mock_app` wraps it
as a Starlette app; :func:`serve_mock` runs it on loopback. See :mod:`anvil.proof.mock.app` for the
behaviour and the ``/__anvil/*`` control routes.
"""

from __future__ import annotations

from anvil.proof.mock.app import MAX_BODY_BYTES, MockApi, create_mock_app
from anvil.proof.mock.server import MOCK_HOST, serve_mock

__all__ = ["MAX_BODY_BYTES", "MOCK_HOST", "MockApi", "create_mock_app", "serve_mock"]
