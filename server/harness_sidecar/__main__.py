from harness_sidecar.cli import main

raise SystemExit(main())
