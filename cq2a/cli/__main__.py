"""``python -m cq2a.cli``: the same as the ``cq2a`` command."""

import sys

from cq2a.cli import main

sys.exit(main())
