"""The proof lanes: they read a bundle and drive it (original-core §8, issue 12).

* :mod:`anvil.proof.mock` - ``anvil mock``, a stateful mock upstream generated from AIR;
* :mod:`anvil.proof.selftest.lane` - ``anvil selftest``, every approved tool over real MCP and every
  declared effect contract proven against the mock (or an operator's sandbox);
* :mod:`anvil.proof.record` - the root-level records the lanes write, bound to the bundle hash;
* :mod:`anvil.proof.processes` - the child processes the lanes start (``anvil mock``).
"""
