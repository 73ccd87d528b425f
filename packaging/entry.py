"""Entry point of the frozen build: the same `main` as the `game-sidecar` console script."""

import sys

from sidecar.cli import main

if __name__ == "__main__":
    sys.exit(main())
