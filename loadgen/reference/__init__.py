"""The user's reference that is generated from code: JSON Schemas for scenario.yaml (from the
scenario models) and report.json (from loadgen.report.model, the model the report is built as).

schemas.py turns the models into the schema files checked in under docs/schema/ (`loadtest
schema scenario|report`, `python -m loadgen.reference` rewrites them); report_doc.py the key
tables of docs/report-json.md.
"""
