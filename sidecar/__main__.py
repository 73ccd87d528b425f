"""`python -m sidecar serve` is the same as the `game-sidecar serve` console script."""

import sys

from sidecar.cli import main

sys.exit(main())
