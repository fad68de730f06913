"""The user's reference that is generated from code: JSON Schemas for scenario.yaml (from the
scenario models) and report.json (from a pydantic model of what the report writers emit).

report_*.py model report.json (extra keys forbidden, so tests that validate real reports against
it catch any drift); schemas.py turns the models into the schema files checked in under
docs/schema/ (`loadtest schema scenario|report`, `python -m loadgen.reference` rewrites them).
"""
