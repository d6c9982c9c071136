"""``python -m seqera_core.cli``: the same as the ``seqera`` console script."""

import sys

from . import main

sys.exit(main())
