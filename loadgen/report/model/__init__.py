"""report.json as pydantic models (schema_version 1): build.py and search_report.py make a
`Report`, every writer reads its attributes, and loadgen.reference generates report.json's JSON
Schema and the key tables of docs/report-json.md from them.

Extra keys are forbidden, so a report that validates proves the model complete; a key written
only in some runs defaults to None and is left out of report.json unless it was set.
"""

from loadgen.report.model.report import Report, Verdict

__all__ = ["Report", "Verdict"]
