"""Image inputs' report side: report.json's `metrics.images` (model), report.md's "Images"
(markdown) and report.html's (html), given to loadgen.report as one SliceSection (section).

A layer above loadgen.report (loadgen.features.<slice>.report, docs/architecture.md): it uses
the report's models, charts and page, and the report imports it by name only. Importing this
package imports none of its modules.
"""
