from orchestrator.model_server.serve import main

raise SystemExit(main())
