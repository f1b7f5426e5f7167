from __future__ import annotations

from greenloop.cli.entry import main

raise SystemExit(main())
