"""``anvil selftest``: every approved tool over real MCP, and every declared effect proven by state.

:mod:`.lane` runs it, :mod:`.checks` holds the per-tool checks, :mod:`.effects` the effect-contract
proofs and :mod:`.support` the example values and call helpers they share.
"""
