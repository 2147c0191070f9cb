"""The skill files a fleet serves as MCP resources, per naming mode and per grant.

Each bundle's skill files (read at start-up) are served as ``anvil://skill/<label>/<path>``: the label
is the service id, or the bundle's connector when tool names are prefixed. Two bundles whose ids fold
to one connector would serve one URI: refused at start (``fleet/resource_collision``). A caller whose
grant hides some of a bundle's tools reads a ``SKILL.md`` and references written for the tools it is
shown (:func:`granted_skill`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from anvil.air.model import Document
from anvil.serve.bundles import FleetError
from anvil.serve.mcp.resources import Resource, skill_resources

__all__ = ["SkillSource", "granted_skill", "skill_table"]


class SkillSource(Protocol):
    """A served bundle as far as its skill files go (a :class:`~anvil.serve.fleet.FleetBundle`)."""

    @property
    def id(self) -> str:
        """The fleet id."""

    @property
    def connector(self) -> str:
        """The folded fleet id."""

    @property
    def document(self) -> Document:
        """The AIR document."""

    @property
    def skill(self) -> tuple[tuple[str, str], ...]:
        """The skill files read at start-up: (path inside ``skill/``, text)."""


def _label(bundle: SkillSource, prefixed: bool) -> str:
    return bundle.connector if prefixed else bundle.document.service.id


def skill_table(bundles: Sequence[SkillSource], prefixed: bool) -> tuple[tuple[Resource, ...], ...]:
    """Each bundle's skill resources, in bundle order.

    Raises:
        FleetError: ``fleet/resource_collision`` when two bundles would serve one URI.
    """
    owners: dict[str, str] = {}
    built = []
    for bundle in bundles:
        served = skill_resources(_label(bundle, prefixed), bundle.document.service.id, bundle.skill)
        for resource in served:
            if resource.uri in owners:  # two ids folding to one connector: never renamed, refused
                raise FleetError(
                    "fleet/resource_collision",
                    f"Resource '{resource.uri}' of bundle '{bundle.id}' collides with the resource of bundle "
                    f"'{owners[resource.uri]}' already served under that URI.",
                    hint="Give one of the bundles a distinct path (its id is its path in the workspace).",
                )
            owners[resource.uri] = bundle.id
        built.append(served)
    return tuple(built)


def granted_skill(bundle: SkillSource, prefixed: bool, shown: frozenset[str]) -> tuple[Resource, ...]:
    """``bundle``'s skill resources as a caller whose grant shows the operations ``shown`` reads them.

    When the grant shows every approved operation these are the bundle's own files. Otherwise
    ``SKILL.md`` and the operations and idempotency references are written anew from the bundle's
    document with the hidden operations left out (as ``/openapi`` leaves them out), and any other file,
    which could describe them, is not served.
    """
    from anvil.bundle.reference import idempotency_markdown, operations_markdown  # only for a narrowing grant
    from anvil.bundle.skill import skill_markdown

    label = _label(bundle, prefixed)
    document = bundle.document
    if all(op.id in shown for op in document.operations if op.is_approved):
        return skill_resources(label, document.service.id, bundle.skill)
    narrowed = replace(
        document,
        operations=tuple(
            op if op.id in shown or not op.is_approved else replace(op, state="generated") for op in document.operations
        ),
    )
    rewritten = {
        "SKILL.md": skill_markdown(narrowed),
        "reference/operations.md": operations_markdown(narrowed),
        "reference/idempotency.md": idempotency_markdown(narrowed),
    }
    files = tuple((path, rewritten[path]) for path, _ in bundle.skill if path in rewritten)
    return skill_resources(label, document.service.id, files)
