"""``anvil simulate``: the contract × dimension matrix and the mutation battery (original-core §8.4).

Every approved operation is driven through the real gateway and executor (``Gateway.call`` ->
``execute``) against :class:`~anvil.proof.simulate.upstream.SimulatedUpstream`, in process, seeded:

* **auth** (``no-principal`` -> ``auth_required``, ``missing-scope`` -> ``permission_denied``,
  ``authorized`` -> ok) for operations that need credentials;
* **confirmation** (``without-confirm`` -> ``confirmation_required``, ``with-confirm`` -> ok);
* **idempotency** for required-key operations (``without-key`` -> ``idempotency_required`` unless a
  key is derived, ``with-key``, ``replay`` -> one upstream request for two calls);
* **fault** (``none``, ``throttle`` -> ``rate_limited``, ``outage`` -> ``upstream_unavailable``,
  ``conflict`` -> ``conflict``), each with the number of attempts the retry policy allows;
* **pagination** for reads with AIR ``pagination`` (:mod:`anvil.proof.simulate.pages`):
  ``first-page`` (a full page that continues), ``next-page`` (the continuation read from page 1 as
  the contract says reaches the upstream as the value page 1 handed out, and page 2 is served) and
  ``last-page`` (page 2 ends); the last two only when the contract locates the continuation;
* **disclosure** (original-core §3.7 budgets, o200k_base tokens): ``tool-surface``
  (the ``tools/list`` entry ``anvil serve`` publishes, at most 1200 tokens, basis ``contract``) and
  ``response-page`` (the answer an agent receives for seeded simulated data, a full first page for a
  paged read, served as ``anvil serve`` serves it: cut by the gateway to the 8000-token response budget,
  every text block counted, basis ``simulated-data``; :mod:`anvil.proof.simulate.served`); each cell
  carries its ``figure``, a response page's with ``rawTokens`` (the whole answer) and ``cut`` too;
* **effect** for operations that declare a contract (``report``: ``_meta.effect`` names the declared
  class, undo kind and lookup; ``stage`` for a draft form).

Expectations come from the compiled AIR (basis ``contract``; the response-page budget is judged on
the answer served for the simulator's seeded data, basis ``simulated-data``); the actual value from
running it. The mutation battery (:mod:`anvil.proof.simulate.mutants`) weakens one control at a
time and runs the same cells against the mutant with the original's expectations: a mutant is killed
when its surface signature changes, and the cells that caught it are listed.

An approved operation no valid example input can be made for (its schema contradicts itself) runs no
cell: the record lists it under ``coverage.skipped`` with the reason, rather than failing every cell.
A bundle that approves no operation has nothing to prove: its record (no cell, ``summary.ok`` false)
carries ``nothingToProve: {reason, operationsApproved: 0}``
(:func:`anvil.proof.scope.nothing_to_prove_marker`), judged ``skipped``, not failed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import anyio

from anvil._types import JSONObject
from anvil.air.model import Document
from anvil.air.values import stopping_when
from anvil.bundle.hash import bundle_hash
from anvil.bundle.read import read_bundle
from anvil.proof.records import timestamp
from anvil.proof.scope import LaneScope, incomplete_marker, nothing_to_prove_marker, select_operations
from anvil.proof.signature import signature_digest
from anvil.proof.simulate.matrix import DIMENSIONS, Cell, Simulator
from anvil.proof.simulate.mutants import run_battery

__all__ = ["SIMULATION_FILE", "simulate"]

SIMULATION_FILE: Final = "simulation.report.json"


def _dimensions(cells: list[Cell]) -> list[JSONObject]:
    out = []
    for dimension in DIMENSIONS:
        mine = [cell for cell in cells if cell.dimension == dimension]
        out.append(
            {
                "dimension": dimension,
                "operations": len({cell.operation_id for cell in mine}),
                "cells": len(mine),
                "passed": sum(1 for cell in mine if cell.ok),
            }
        )
    return out


async def _simulate(
    doc: Document, seed: int, scope: LaneScope
) -> tuple[list[Cell], list[JSONObject], dict[str, str], int]:
    simulator = Simulator(doc, seed=seed)
    with stopping_when(scope.should_stop):  # the time cap and a signal hold while a value is being made
        cells = await simulator.matrix(doc, scope=scope)
    targets = {cell.operation_id for cell in cells}
    if scope.should_stop():  # stopped: the battery is not started (the record is incomplete)
        return cells, [], simulator.skipped, simulator.finished
    mutants = await run_battery(doc, Simulator(doc, seed=seed), targets=targets if scope.operations else None)
    return cells, mutants, simulator.skipped, simulator.finished


def simulate(
    directory: Path,
    *,
    seed: int = 1,
    clock: Callable[[], datetime] | None = None,
    scope: LaneScope | None = None,
) -> dict[str, Any]:
    """Simulate the bundle in ``directory`` and return its ``simulation.report.json`` record (not written).

    Args:
        directory: The bundle directory.
        seed: The seed of the simulated upstream's data (the same seed gives the same record).
        clock: The wall clock for ``simulatedAt`` (a test seam).
        scope: Which operations run, progress lines and when to stop (default: every approved
            operation, silently); a run that covers less is marked ``incomplete``.

    Raises:
        BundleError: ``bundle/invalid`` when the bundle cannot be read.
    """
    scope = scope or LaneScope()
    doc = read_bundle(directory)
    digest = bundle_hash(directory)
    cells, mutants, skipped, finished = anyio.run(_simulate, doc, seed, scope)
    approved = sum(1 for op in doc.operations if op.is_approved)
    selected = len(select_operations(doc.operations, scope.operations))
    incomplete = incomplete_marker(
        scope, selected=selected, approved=approved, finished=finished, left_out="the mutation battery"
    )
    vacant = nothing_to_prove_marker(approved)
    passed = sum(1 for cell in cells if cell.ok)
    applicable = [m for m in mutants if m["applicable"]]
    killed = sum(1 for m in applicable if m["killed"])
    ok = bool(cells) and passed == len(cells) and killed == len(applicable)
    operations = len({cell.operation_id for cell in cells})
    capability = doc.capabilities[0].id if len(doc.capabilities) == 1 else None
    return {
        "schemaVersion": 1,
        "bundle": directory.name,
        "bundleHash": digest,
        "coverage": {
            "schemaVersion": 1,
            "capabilityId": capability,
            "seed": seed,
            "surfaceSignatureDigest": signature_digest(doc),
            "cells": [cell.to_json() for cell in cells],
            "dimensions": _dimensions(cells),
            "summary": {"operations": operations, "cells": len(cells), "passed": passed, "failed": len(cells) - passed},
            "skipped": [{"operationId": op_id, "reason": skipped[op_id]} for op_id in sorted(skipped)],
        },
        "mutation": {"mutants": mutants, "applicable": len(applicable), "killed": killed},
        "summary": {
            "coverageCells": len(cells),
            "coveragePassed": passed,
            "mutantsKilled": killed,
            "mutantsApplicable": len(applicable),
            "ok": ok,
        },
        "simulatedAt": timestamp(clock),
        **({"incomplete": incomplete} if incomplete is not None else {}),
        **({"nothingToProve": vacant} if vacant is not None else {}),
    }
