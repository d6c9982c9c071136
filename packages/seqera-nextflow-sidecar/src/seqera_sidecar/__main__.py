"""``python -m seqera_sidecar``."""

from .cli import main

raise SystemExit(main())
