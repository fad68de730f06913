"""loadtest's load generator. Importing any part of it first wires the feature slices into the
core (loadgen.features): their record fields and statistics are known before a record is read."""

import loadgen.features  # noqa: F401  (the wiring, at the top of the layers)
