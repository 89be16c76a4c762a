"""`python -m reconciler.cli`: the `dro` command, for environments without the console script.

Called by no module of the package: an entry point.
"""

import sys

from reconciler.cli import main

sys.exit(main())
