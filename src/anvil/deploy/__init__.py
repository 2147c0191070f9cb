"""deploy stage: offline deployment evidence read from a compiled bundle (never a cloud call).

* :mod:`anvil.deploy.freshness` - :func:`~anvil.deploy.freshness.check_freshness` compares every
  compiler-owned file with a fresh deterministic projection of the bundle's own AIR and persisted generator
  inputs (per-file state: fresh, missing, tampered, unexpected, symlink, malformed), and
  :func:`~anvil.deploy.freshness.inspect_store` runs the store-contract state machine (fresh, missing,
  corrupt, stale) on top of it. ``anvil certify`` and ``anvil status`` use these too.
* :mod:`anvil.deploy.report` - :func:`~anvil.deploy.report.plan_ledger`: ``anvil deploy ledger``'s text,
  ``--json`` report and ``--tfvars``.
* :mod:`anvil.deploy.digest` - the plan-binding ledger input digest; :mod:`anvil.deploy.options` - flag
  validation with coded refusals.
"""

__all__: list[str] = []
