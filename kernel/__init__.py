"""The shared kernel: what both `loadgen` and `servers` stand on.

Config model base (`strict`), units in scenario files (`units`), where a scenario's relative
paths count from (`paths`), and redaction (`redact`). It
imports nothing from `loadgen` or `servers`.
"""
