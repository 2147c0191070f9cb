"""``anvil serve``'s disclosure flags and variables: what ``tools/list`` shows at rest and how long an answer may be.

``--disclosure`` / ``ANVIL_DISCLOSURE`` (``auto``, ``flat``, ``search``, ``laddered``; default ``auto``),
``--surface-budget`` / ``ANVIL_SURFACE_BUDGET`` (o200k tokens at rest, default 20000) and
``--result-token-budget`` / ``ANVIL_RESULT_TOKEN_BUDGET`` (one answer's text in tokens, default 8000; 0
turns the cut off). A flag wins over its variable; a bad value is ``config/invalid``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from anvil.errors import ConfigError
from anvil.serve.discovery.modes import (
    DEFAULT_RESULT_TOKEN_BUDGET,
    DEFAULT_SURFACE_BUDGET_TOKENS,
    MAX_SURFACE_BUDGET_TOKENS,
    MODES,
    DisclosureSettings,
)

__all__ = ["disclosure_settings", "result_token_budget"]


def disclosure_settings(environ: Mapping[str, str], args: argparse.Namespace) -> DisclosureSettings:
    """``--disclosure`` / ``ANVIL_DISCLOSURE`` and ``--surface-budget`` / ``ANVIL_SURFACE_BUDGET``.

    Raises:
        ConfigError: an unknown mode, or a budget that is not a whole number from 1 to 2,000,000.
    """
    flag = getattr(args, "disclosure", None)
    mode = (flag if flag is not None else environ.get("ANVIL_DISCLOSURE", "")).strip() or "auto"
    if mode not in MODES:
        raise ConfigError(
            "config/invalid",
            f"Unknown disclosure mode {mode[:40]!r}.",
            hint=f"Use one of {', '.join(MODES)} (--disclosure or ANVIL_DISCLOSURE).",
        )
    budget = _whole(
        getattr(args, "surface_budget", None),
        environ.get("ANVIL_SURFACE_BUDGET", ""),
        "The surface budget (--surface-budget, ANVIL_SURFACE_BUDGET)",
        1,
        MAX_SURFACE_BUDGET_TOKENS,
    )
    chosen = DEFAULT_SURFACE_BUDGET_TOKENS if budget is None else budget
    return DisclosureSettings(mode=mode, surface_budget=chosen)  # type: ignore[arg-type]  # checked above


def result_token_budget(environ: Mapping[str, str], flag: str | None) -> int:
    """``--result-token-budget`` / ``ANVIL_RESULT_TOKEN_BUDGET`` (0 to 2,000,000 tokens; 0: no cut), default 8000.

    Raises:
        ConfigError: not a whole number in range.
    """
    found = _whole(
        flag,
        environ.get("ANVIL_RESULT_TOKEN_BUDGET", ""),
        "The response budget (--result-token-budget, ANVIL_RESULT_TOKEN_BUDGET)",
        0,
        MAX_SURFACE_BUDGET_TOKENS,
    )
    return DEFAULT_RESULT_TOKEN_BUDGET if found is None else found


def _whole(flag: str | None, variable: str, what: str, low: int, high: int) -> int | None:
    raw = (flag if flag is not None else variable).strip()
    if not raw:
        return None
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ConfigError("config/invalid", f"{what} must be a whole number of tokens from {low} to {high:,}.")
    return int(raw)
