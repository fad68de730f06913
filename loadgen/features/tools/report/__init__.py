"""Tool calls' report side: report.json's `metrics.tools` (model), report.md's key-number line and
report.html's card (section), given to loadgen.report as one SliceSection.

A layer above loadgen.report (loadgen.features.<slice>.report, docs/architecture.md): it uses
the report's models and page, and the report imports it by name only. Importing this package
imports none of its modules.
"""
