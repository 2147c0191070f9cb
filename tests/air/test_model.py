"""AIR model helpers: the credential parts of an auth and how listings name it."""

from __future__ import annotations

import dataclasses

from anvil.air import model
from anvil.air.model import Auth, auth_label, credential_parts


def test_a_composite_sends_its_factors_and_any_other_auth_itself() -> None:
    factors = (Auth(type="api_key"), Auth(type="basic"))
    assert credential_parts(Auth(type="composite", factors=factors)) == factors
    assert credential_parts(Auth(type="composite")) == ()
    assert credential_parts(Auth(type="basic")) == (Auth(type="basic"),)


def test_a_composite_is_labelled_by_its_factors_profile_stems() -> None:
    factors = (
        Auth(type="api_key", credential_profile="client_id_91893362b02d01c00fb71bc6be02065d"),
        Auth(type="basic"),
    )
    assert auth_label(Auth(type="composite", factors=factors)) == "composite (client_id + basic)"
    assert auth_label(Auth(type="composite")) == "composite (no factors)"
    assert auth_label(Auth(type="jwt_bearer")) == "jwt_bearer"


def test_every_air_node_class_documents_itself_so_none_has_its_docstring_made_from_its_signature_at_import() -> None:
    # A dataclass without a docstring gets one from inspect.signature when it is created: a cold start's cost.
    nodes = [getattr(model, name) for name in model.__all__ if dataclasses.is_dataclass(getattr(model, name))]
    assert len(nodes) == 41
    assert [node.__name__ for node in nodes if (node.__doc__ or "").startswith(f"{node.__name__}(")] == []
