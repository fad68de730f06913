"""Transcriptions' report side: report.json's `metrics.audio` (model) and report.md's key line
(section), given to loadgen.report as one SliceSection. A layer above loadgen.report; importing
this package imports none of its modules."""
