"""The shared kernel: what both `loadgen` and `servers` stand on.

Config model base (`strict`), units in scenario files (`units`), and redaction (`redact`). It
imports nothing from `loadgen` or `servers`.
"""
