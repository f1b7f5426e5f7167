from __future__ import annotations

from greenloop.cli import main

raise SystemExit(main())
