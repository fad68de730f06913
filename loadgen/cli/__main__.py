"""`python -m loadgen.cli`: the same as the `loadtest` console script."""

from loadgen.cli.main import entry

entry()
