"""RPC-style paths: the verb of a path's last word, and the paths that undo a make."""

from __future__ import annotations

from anvil.air.rpc import RpcVerb, rpc_verb, undo_paths


def test_a_dotted_or_slashed_last_word_is_split_at_its_leading_verb() -> None:
    assert rpc_verb("/pins.add") == RpcVerb("/pins", ".", "add", "")
    assert rpc_verb("/admin.conversations.restrictAccess.addGroup") == RpcVerb(
        "/admin.conversations.restrictAccess", ".", "add", "Group"
    )
    assert rpc_verb("/transfer/create") == RpcVerb("/transfer", "/", "create", "")
    assert rpc_verb("/item/remove_all") == RpcVerb("/item", "/", "remove", "_all")


def test_a_word_that_only_starts_like_a_verb_a_parameter_or_a_bare_verb_is_no_rpc_verb() -> None:
    assert rpc_verb("/users/address") is None  # ``address`` is not ``add`` + a word
    assert rpc_verb("/orders/cancellations") is None
    assert rpc_verb("/pets/{id}") is None
    assert rpc_verb("/create") is None  # nothing before the verb names what it makes
    assert rpc_verb("/pins.list") is None


def test_a_make_is_undone_by_a_delete_or_remove_as_an_inverse_and_compensated_by_a_cancel() -> None:
    assert undo_paths("/pins.add") == [
        ("/pins.delete", "inverse"),
        ("/pins.remove", "inverse"),
        ("/pins.cancel", "compensate"),
    ]
    assert ("/admin.usergroups.removeChannels", "inverse") in undo_paths("/admin.usergroups.addChannels")
    assert undo_paths("/pins.remove") == []  # only a make is undone
