"""MCP resources: a bundle's skill package as ``anvil://skill/<service>/<path>`` (original-core §5.10),
and the whole input schema of a tool listed with a summary as ``anvil://schema/<tool>``.

A :class:`Resource` is built once, at start-up, from the text read then; ``resources/list`` shows its
:meth:`~Resource.entry` and ``resources/read`` answers its :meth:`~Resource.contents`. A read is a
lookup of the whole URI in the provider's fixed table, so an unknown URI (or one the caller may not
see) is one answer: :data:`RESOURCE_NOT_FOUND`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.input_summary import schema_uri
from anvil.ledger.answers import KeptAnswer

__all__ = [
    "MARKDOWN",
    "RESOURCE_NOT_FOUND",
    "SCHEMA_JSON",
    "Resource",
    "answer_contents",
    "schema_resource",
    "skill_resources",
]

#: The MCP error code for a resource that is not served (the specification's "Resource not found").
RESOURCE_NOT_FOUND: Final = -32002
#: The MIME type of every skill file served.
MARKDOWN: Final = "text/markdown"
#: The MIME type of a tool's whole input schema.
SCHEMA_JSON: Final = "application/schema+json"
_SKILL: Final = "SKILL.md"


@dataclass(frozen=True, slots=True)
class Resource:
    """One served resource: its URI, listing fields and text."""

    uri: str
    name: str
    description: str
    text: str
    priority: float
    mime_type: str = MARKDOWN

    def entry(self) -> JSONObject:
        """The ``resources/list`` entry."""
        return {
            "uri": self.uri,
            "name": self.name,
            "description": self.description,
            "mimeType": self.mime_type,
            "annotations": {"audience": ["assistant"], "priority": self.priority},
        }

    def contents(self) -> JSONObject:
        """The ``resources/read`` result."""
        return {"contents": [{"uri": self.uri, "mimeType": self.mime_type, "text": self.text}]}


def skill_resources(label: str, service: str, files: Sequence[tuple[str, str]]) -> tuple[Resource, ...]:
    """The resources of one bundle's skill files ((path inside ``skill/``, text)), under ``anvil://skill/<label>/``.

    Args:
        label: The URI segment naming the bundle (its service id, or its connector in a prefixed fleet).
        service: The service id (for the descriptions).
        files: The skill files read at start-up.
    """
    out = []
    for path, text in files:
        skill = path == _SKILL
        description = f"How to use the {service} tools" if skill else f"The {service} skill reference: {path}"
        out.append(
            Resource(
                uri=f"anvil://skill/{label}/{path}",
                name=f"{label}/{path}",
                description=description,
                text=text,
                priority=0.95 if skill else 0.6,
            )
        )
    return tuple(out)


def answer_contents(uri: str, kept: KeptAnswer) -> JSONObject:
    """The ``resources/read`` result for ``kept``: its text when it is UTF-8, else its bytes as a blob."""
    try:
        text = kept.body.decode("utf-8")
    except UnicodeDecodeError:
        blob = base64.b64encode(kept.body).decode("ascii")
        return {"contents": [{"uri": uri, "mimeType": kept.media_type, "blob": blob}]}
    return {"contents": [{"uri": uri, "mimeType": kept.media_type, "text": text}]}


def schema_resource(tool: str, schema: JSONObject) -> Resource:
    """The whole input schema of ``tool`` (as the caller dials it), whose listing shows a summary of it.

    The text is the schema as compact JSON, the same bytes the listing would have published whole.
    """
    return Resource(
        uri=schema_uri(tool),
        name=f"schema/{tool}",
        description=f"The whole input schema of {tool} (its tools/list entry shows a summary)",
        text=json.dumps(schema, separators=(",", ":"), ensure_ascii=False),
        priority=0.5,
        mime_type=SCHEMA_JSON,
    )
