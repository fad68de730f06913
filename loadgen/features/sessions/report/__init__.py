"""Multi-turn sessions' report side: report.md's "Sessions" (markdown) and report.html's (html),
given to loadgen.report as one SliceSection (section). What they show, report.json's
`metrics.sessions`, is the core's measurement of its follow-ups (loadgen.collect.session_stats),
which keeps its place among the core's keys; this side has no model of its own.

A layer above loadgen.report (loadgen.features.<slice>.report, docs/architecture.md): it uses
the report's models, charts and page, and the report imports it by name only. Importing this
package imports none of its modules.
"""
