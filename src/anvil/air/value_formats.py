"""The strings the value generator gives each known ``format`` (:mod:`anvil.air.values`).

Each format lists its values longest first: the generator takes the first that fits the schema's
length bounds and pattern. ``uuid`` and ``byte`` are not listed: they vary with the seed and call.
"""

from __future__ import annotations

from typing import Final

__all__ = ["FORMAT_VALUES", "NUMERIC_FORMATS"]

#: The value each known ``format`` gets (``uuid`` and ``byte`` vary with the seed and call instead).
FORMAT_VALUES: Final[dict[str, tuple[str, ...]]] = {
    "date-time": ("2030-01-01T00:00:00Z",),
    "datetime": ("2030-01-01T00:00:00Z",),
    "date": ("2030-01-01",),
    "time": ("00:00:00Z",),
    "partial-time": ("00:00:00",),
    "email": ("user@example.com", "u@example.com", "u@e.co"),
    "idn-email": ("user@example.com", "u@e.co"),
    "uri": ("https://example.com/resource", "https://e.co", "a:b"),
    "url": ("https://example.com/resource", "https://e.co", "http://e"),
    "iri": ("https://example.com/resource", "https://e.co"),
    "uri-reference": ("https://example.com/resource", "/r"),
    "uriref": ("https://example.com/resource", "/r"),
    "hostname": ("example.com", "e.co", "e"),
    "idn-hostname": ("example.com", "e.co"),
    "ipv4": ("192.0.2.1",),
    "ip": ("192.0.2.1",),
    "ipv6": ("2001:db8::1",),
    "unixtime": ("1893456000",),
    "timezone": ("UTC",),
}
#: Formats some specs put on strings that carry numbers: digits are what the API expects there.
NUMERIC_FORMATS: Final = frozenset({"int32", "int64", "integer", "long", "double", "float", "decimal", "number"})
