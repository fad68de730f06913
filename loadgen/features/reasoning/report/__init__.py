"""Reasoning streams' report side: report.json's `metrics.reasoning` (model), report.md's key
numbers (markdown) and report.html's "Reasoning" section (html), given to loadgen.report as one
SliceSection (section).

A layer above loadgen.report (loadgen.features.<slice>.report, docs/architecture.md): it uses
the report's models, charts and page, and the report imports it by name only. Importing this
package imports none of its modules.
"""
