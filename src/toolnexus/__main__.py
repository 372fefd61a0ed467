"""`python -m toolnexus` runs the command line."""

from toolnexus.cli import main

raise SystemExit(main())
