"""``anvil conformance``: MCP, REST, CLI and the skill reference agree on every operation.

:mod:`.lane` drives the surfaces against the generated mock, :mod:`.live` against an operator's
sandbox; :mod:`.static` compares the skill reference with AIR and :mod:`.surfaces` calls each surface.
"""
