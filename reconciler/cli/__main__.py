"""`python -m reconciler.cli`: the `dro` command, for environments without the console script."""

import sys

from reconciler.cli import main

sys.exit(main())
