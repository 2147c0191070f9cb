"""The proof lanes: they read a bundle and drive it (original-core §8).

One subpackage per lane, each a room of its own that never imports another lane:

* :mod:`anvil.proof.mock` - ``anvil mock``, a stateful mock upstream generated from AIR (the lanes share it);
* :mod:`anvil.proof.certify` - ``anvil certify``, static checks of the bundle against its AIR;
* :mod:`anvil.proof.selftest` - ``anvil selftest``, every approved tool over real MCP and every
  declared effect contract proven against the mock (or an operator's sandbox);
* :mod:`anvil.proof.conformance` - ``anvil conformance``, MCP, REST, CLI and the skill reference agree;
* :mod:`anvil.proof.simulate` - ``anvil simulate``, the contract matrix and the mutation battery.

The evidence they share lives here: :mod:`.record` / :mod:`.records` (root-level records bound to the
bundle hash, and their verdicts), :mod:`.status` (``anvil status``: the write gate), :mod:`.processes`
(child processes such as ``anvil mock``), :mod:`.disclosure` (what the tool list costs an agent),
:mod:`.signature` (the surface signature), :mod:`.generated` (generated-bytes agreement) and
:mod:`.skill` (the skill reference read back).
"""
