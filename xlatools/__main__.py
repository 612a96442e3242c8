from xlatools.cli import main

raise SystemExit(main())
