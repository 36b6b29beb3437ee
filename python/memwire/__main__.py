"""``python -m memwire`` and the ``memwire`` command: see :mod:`memwire.cli`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the memwire command line with ``argv`` (default: ``sys.argv[1:]``); the exit code."""
    from memwire.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
