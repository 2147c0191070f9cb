"""``anvil certify``: static checks of a bundle against its own AIR (:mod:`.lane`, :mod:`.checks`)."""
