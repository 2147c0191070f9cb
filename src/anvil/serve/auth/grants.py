"""Grants: what a caller may do on each connector, and the decision for one call (original-gateway §1.7).

A grant is a list of entries, as carried in a token's ``by_grants`` claim or a principals file::

    {"connector": "github", "operations": ["issues.*", "pulls.list"], "mode": "read" | "write",
     "account": "work", "confirm": "allow"}

Parsing is all-or-nothing: one bad entry makes the whole grant invalid (and so the token carrying it).
Globs are ``*`` (any run of characters, dots included, possibly empty), ``?`` (exactly one character)
and literals, matched against the whole operation id. The decision walks five steps in a fixed order;
a refusal is never retryable. A principal without a grant skips this gate entirely; an empty grant
allows nothing.

Nothing here imports the serving transport: the module depends only on AIR and the runtime envelope,
so the executor's grant gate can call it directly.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from typing import Final, Literal, NamedTuple

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.model import Operation
from anvil.errors import AnvilError
from anvil.runtime.envelope import ErrorEnvelope
from anvil.serve.auth.naming import CONNECTOR_PATTERN

__all__ = [
    "MAX_ENTRIES",
    "MAX_GLOBS",
    "MAX_GLOB_CHARS",
    "Glob",
    "GrantDecision",
    "GrantEntry",
    "GrantError",
    "GrantMode",
    "GrantTarget",
    "Verdict",
    "decide",
    "grant_json",
    "names_tried",
    "parse_grants",
    "refusal_envelope",
    "visible",
]

GrantMode = Literal["read", "write"]
Verdict = Literal["allowed", "denied", "confirmation_required"]

#: At most this many entries in one grant.
MAX_ENTRIES: Final = 64
#: At most this many operation globs in one entry.
MAX_GLOBS: Final = 256
#: At most this many characters in one glob.
MAX_GLOB_CHARS: Final = 256
#: The account an allowing entry without ``account`` resolves to.
DEFAULT_ACCOUNT: Final = "default"
_ACCOUNT: Final = re.compile(r"^[A-Za-z0-9._@-]{1,128}$")
_KNOWN_KEYS: Final = ("connector", "operations", "mode", "account", "confirm")


class GrantError(AnvilError):
    """A grant list that does not parse (code ``grant/invalid``); the message names the entry and field."""

    def __init__(self, message: str) -> None:
        super().__init__("grant/invalid", message)


# --- globs -----------------------------------------------------------------------------------------


class _Segment:
    """A fixed-length piece of a glob between two ``*``: literal text where ``?`` matches one character."""

    __slots__ = ("_pattern", "size", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = len(text)
        # A quantifier-free pattern: matching it costs at most its length, so no glob can backtrack badly.
        self._pattern = re.compile(".".join(map(re.escape, text.split("?"))), re.DOTALL) if "?" in text else None

    def at(self, value: str, pos: int) -> bool:
        """True when the segment matches ``value`` starting exactly at ``pos``."""
        if self._pattern is None:
            return value.startswith(self.text, pos)
        return self._pattern.match(value, pos) is not None

    def find(self, value: str, pos: int, end: int) -> int:
        """The leftmost start at or after ``pos`` where the segment fits before ``end``, else -1."""
        if self._pattern is None:
            return value.find(self.text, pos, end)
        found = self._pattern.search(value, pos, end)
        return -1 if found is None else found.start()


class Glob:
    """One compiled operation glob: ``*`` any run (dots and empty included), ``?`` one character.

    Matching is linear in the glob times the subject: the fixed pieces between stars are placed
    leftmost, which is exact for star-only wildcards.
    """

    __slots__ = ("_first", "_last", "_middle", "_min_size", "_star", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        pieces = text.split("*")
        self._star = len(pieces) > 1
        self._first = _Segment(pieces[0])
        self._last = _Segment(pieces[-1])
        self._middle = tuple(_Segment(piece) for piece in pieces[1:-1] if piece)
        self._min_size = self._first.size + sum(s.size for s in self._middle) + (self._last.size if self._star else 0)

    def matches(self, value: str) -> bool:
        """True when the whole of ``value`` matches the glob."""
        if not self._star:
            return len(value) == self._first.size and self._first.at(value, 0)
        if len(value) < self._min_size:
            return False
        end = len(value) - self._last.size
        if not self._first.at(value, 0) or not self._last.at(value, end):
            return False
        pos = self._first.size
        for segment in self._middle:
            found = segment.find(value, pos, end)
            if found < 0:
                return False
            pos = found + segment.size
        return True


@functools.lru_cache(maxsize=4096)
def _compile(text: str) -> Glob:
    # Tokens carry the same grants on every request; compile each distinct glob once per process.
    return Glob(text)


# --- entries and parsing ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantEntry:
    """One parsed grant entry (unknown keys already dropped)."""

    connector: str
    operations: tuple[str, ...]
    mode: GrantMode
    account: str | None = None
    confirm: Literal["allow"] | None = None
    globs: tuple[Glob, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.globs:
            object.__setattr__(self, "globs", tuple(_compile(text) for text in self.operations))

    def names(self, candidates: Iterable[str]) -> bool:
        """True when some glob of this entry matches some candidate name."""
        names = tuple(candidates)
        return any(glob.matches(name) for glob in self.globs for name in names)

    def covers(self, is_read: bool) -> bool:
        """True when the mode covers the operation (``read`` only reads; ``write`` both)."""
        return self.mode == "write" or is_read

    def to_json(self) -> JSONObject:
        """The entry as JSON: ``{connector, operations, mode, account?, confirm?}``."""
        out: JSONObject = {"connector": self.connector, "operations": list(self.operations), "mode": self.mode}
        if self.account is not None:
            out["account"] = self.account
        if self.confirm is not None:
            out["confirm"] = self.confirm
        return out


def _parse_entry(index: int, raw: JSONValue) -> GrantEntry:
    where = f"grant entry {index}"
    if not isinstance(raw, Mapping):
        raise GrantError(f"The {where} is not an object.")
    connector = raw.get("connector")
    if not isinstance(connector, str) or not CONNECTOR_PATTERN.match(connector):
        raise GrantError(f"The {where} needs a connector of 1-64 characters from [A-Za-z0-9_-].")
    operations = raw.get("operations")
    if not isinstance(operations, list) or not 1 <= len(operations) <= MAX_GLOBS:
        raise GrantError(f"The {where} needs 1-{MAX_GLOBS} operation globs in 'operations'.")
    for glob in operations:
        if not isinstance(glob, str) or not 1 <= len(glob) <= MAX_GLOB_CHARS:
            raise GrantError(
                f"The {where} has an operation glob that is not a string of 1-{MAX_GLOB_CHARS} characters."
            )
    mode = raw.get("mode")
    if mode != "read" and mode != "write":
        raise GrantError(f"The {where} needs mode 'read' or 'write'.")
    account = raw.get("account")
    if account is not None and (not isinstance(account, str) or not _ACCOUNT.match(account)):
        raise GrantError(f"The {where} has an account that is not 1-128 characters from [A-Za-z0-9._@-].")
    if "account" in raw and account is None:
        raise GrantError(f"The {where} has a null account.")
    confirm = raw.get("confirm")
    if "confirm" in raw and confirm != "allow":
        raise GrantError(f"The {where} has confirm other than 'allow'.")
    return GrantEntry(
        connector=connector,
        operations=tuple(operations),
        mode=mode,
        account=account,
        confirm="allow" if confirm == "allow" else None,
    )


def parse_grants(value: JSONValue) -> tuple[GrantEntry, ...]:
    """Parse a grant list, all or nothing (``[]`` is a valid, empty grant).

    Args:
        value: the decoded JSON value (a ``by_grants`` claim, a principals-file ``grants`` member).

    Returns:
        The entries in order, with only the known keys (connector, operations, mode, account, confirm).

    Raises:
        GrantError: not a list, more than 64 entries, or any entry breaking a rule of original-gateway §1.7.
    """
    if not isinstance(value, list):
        raise GrantError("The grant is not a list of entries.")
    if len(value) > MAX_ENTRIES:
        raise GrantError(f"The grant has more than {MAX_ENTRIES} entries.")
    return tuple(_parse_entry(index, raw) for index, raw in enumerate(value))


def grant_json(grants: Sequence[GrantEntry]) -> list[JSONObject]:
    """The grant as a JSON list of entries (what a session fingerprint binds)."""
    return [entry.to_json() for entry in grants]


# --- the decision ----------------------------------------------------------------------------------


class GrantTarget(NamedTuple):
    """What the decision needs to know about an operation.

    ``needs_confirmation`` is true for a mutation whose AIR ``confirmation.required`` is set.
    """

    operation_id: str
    service_id: str
    is_read: bool
    needs_confirmation: bool

    @classmethod
    def of(cls, op: Operation, service_id: str | None = None) -> GrantTarget:
        """The target for an AIR operation; ``service_id`` defaults to the id's first segment."""
        service = service_id if service_id is not None else op.id.split(".", 1)[0]
        return cls(op.id, service, op.is_read, not op.is_read and op.confirmation.required)


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantDecision:
    """The answer of :func:`decide`.

    Attributes:
        allowed: the call may proceed.
        code: ``None`` when allowed, else ``policy/grant_denied`` or ``policy/grant_confirmation_required``.
        envelope_code: ``None`` when allowed, else ``policy_denied`` or ``confirmation_required``.
        message: a sentence for the caller (names the connector and operation, never a secret).
        rule: the entry the decision names, as ``{index, connector, operations, mode, account?, confirm?}``,
            or None (no entry for the connector, or none naming the operation).
        account: allowed: the entry's account or ``default``; refused with a rule: its account or None.
    """

    allowed: bool
    code: str | None
    envelope_code: str | None
    message: str
    rule: JSONObject | None = None
    account: str | None = None

    @property
    def verdict(self) -> Verdict:
        """The audit line's ``decision``: ``allowed``, ``denied`` or ``confirmation_required``."""
        if self.allowed:
            return "allowed"
        return "confirmation_required" if self.envelope_code == "confirmation_required" else "denied"


def names_tried(operation_id: str, service_id: str) -> tuple[str, ...]:
    """The names globs are matched against: the AIR id, and the id without ``<serviceId>.`` when it has it."""
    prefix = service_id + "."
    if service_id and operation_id.startswith(prefix) and len(operation_id) > len(prefix):
        return (operation_id, operation_id[len(prefix) :])
    return (operation_id,)


def _rule(index: int, entry: GrantEntry) -> JSONObject:
    return {"index": index, **entry.to_json()}


def _denied(message: str, index: int | None = None, entry: GrantEntry | None = None) -> GrantDecision:
    rule = None if index is None or entry is None else _rule(index, entry)
    account = None if entry is None else entry.account
    return GrantDecision(
        allowed=False,
        code="policy/grant_denied",
        envelope_code="policy_denied",
        message=message,
        rule=rule,
        account=account,
    )


def decide(
    grants: Sequence[GrantEntry],
    connector: str,
    operation: Operation | GrantTarget,
    *,
    service_id: str | None = None,
) -> GrantDecision:
    """Decide one call against a grant, in the order of original-gateway §1.7.

    1. entries for ``connector``; none: denied, no rule;
    2. of those, entries with a glob naming the operation; none: denied, no rule;
    3. of those, entries whose mode covers it; none: denied (read-only), rule = first naming entry;
    4. a confirmation-gated mutation keeps entries with ``confirm: allow``; none:
       ``confirmation_required``, rule = first mode-ok entry;
    5. allowed by the first remaining entry; account = its ``account`` or ``default``.

    Args:
        grants: the principal's parsed grant (an empty grant allows nothing).
        connector: the call's connector (the bundle's folded fleet id).
        operation: the AIR operation, or a :class:`GrantTarget`.
        service_id: the AIR service id when ``operation`` is an :class:`Operation` (defaults to the
            id's first segment).

    Returns:
        The decision; never raises.
    """
    target = operation if isinstance(operation, GrantTarget) else GrantTarget.of(operation, service_id)
    op_id = target.operation_id
    for_connector = [(index, entry) for index, entry in enumerate(grants) if entry.connector == connector]
    if not for_connector:
        return _denied(f"The grant has no entry for connector '{connector}'.")
    names = names_tried(op_id, target.service_id)
    naming = [(index, entry) for index, entry in for_connector if entry.names(names)]
    if not naming:
        return _denied(f"No grant entry for connector '{connector}' names operation '{op_id}'.")
    mode_ok = [(index, entry) for index, entry in naming if entry.covers(target.is_read)]
    if not mode_ok:
        index, entry = naming[0]
        return _denied(
            f"The grant for connector '{connector}' is read-only; operation '{op_id}' is a write.", index, entry
        )
    if target.needs_confirmation:
        confirming = [(index, entry) for index, entry in mode_ok if entry.confirm == "allow"]
        if not confirming:
            index, entry = mode_ok[0]
            return GrantDecision(
                allowed=False,
                code="policy/grant_confirmation_required",
                envelope_code="confirmation_required",
                message=(
                    f"Operation '{op_id}' needs confirmation, and no grant entry for connector '{connector}' "
                    "allows confirmed calls (confirm: allow)."
                ),
                rule=_rule(index, entry),
                account=entry.account,
            )
        mode_ok = confirming
    index, entry = mode_ok[0]
    return GrantDecision(
        allowed=True,
        code=None,
        envelope_code=None,
        message=f"Allowed by grant entry {index} for connector '{connector}'.",
        rule=_rule(index, entry),
        account=entry.account or DEFAULT_ACCOUNT,
    )


def visible(
    grants: Sequence[GrantEntry] | None,
    connector: str,
    operation: Operation | GrantTarget | None,
    *,
    service_id: str | None = None,
) -> bool:
    """Whether ``tools/list`` shows a tool to a principal with this grant.

    No grant: everything is shown. A tool backed by an operation is shown iff :func:`decide` allows it;
    a tool without one (a workflow or composite) iff some entry names the connector. Hidden tools stay
    callable, so a call still gets the structured refusal.
    """
    if grants is None:
        return True
    if operation is None:
        return any(entry.connector == connector for entry in grants)
    return decide(grants, connector, operation, service_id=service_id).allowed


def refusal_envelope(
    decision: GrantDecision, principal_id: str, connector: str, operation_id: str, trace_id: str
) -> ErrorEnvelope:
    """The error envelope of a grant refusal (original-core §5.7 shape), never retryable.

    ``details`` = ``{code, connector, principalId, rule}`` with ``rule`` null when no entry was named.

    Raises:
        ValueError: the decision allowed the call (there is nothing to refuse).
    """
    if decision.allowed or decision.code is None or decision.envelope_code is None:
        raise ValueError("an allowing grant decision has no refusal envelope")
    details: JSONObject = {
        "code": decision.code,
        "connector": connector,
        "principalId": principal_id,
        "rule": None if decision.rule is None else dict(decision.rule),
    }
    return ErrorEnvelope(
        code=decision.envelope_code,
        message=decision.message,
        retryable=False,
        safe_to_retry=False,
        operation=operation_id,
        trace_id=trace_id,
        details=details,
    )
