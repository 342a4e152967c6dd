from orchestrator.cli.main import main

raise SystemExit(main())
