from chargenet.cli.main import main

raise SystemExit(main())
