"""``python -m graphsvc.cli``: the same as the ``graphsvc`` command."""

from graphsvc.cli import main

main()
