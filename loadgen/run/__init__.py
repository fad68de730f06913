"""One run, from server start to report: the run context, its drivers (plain, distributed,
search) and what guards them. Lives in the gevent world: import only after monkey-patching."""
