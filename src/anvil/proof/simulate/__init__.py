"""``anvil simulate``: the contract x dimension matrix and the mutation battery.

:mod:`.lane` runs it; :mod:`.matrix` holds the simulator that fills the matrix, :mod:`.mutants` the
battery, :mod:`.upstream` and :mod:`.pages` the simulated upstream and its pagination.
"""
