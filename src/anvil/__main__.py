"""``python -m anvil`` runs the CLI."""

from anvil.cli import main

raise SystemExit(main())
