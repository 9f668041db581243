"""``python -m knowhub`` runs the CLI."""

from knowhub.interfaces.cli import main

main()
