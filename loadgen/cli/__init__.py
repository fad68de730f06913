"""The `loadtest` command line: one module per subcommand family; main.py parses and dispatches."""
