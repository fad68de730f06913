"""The release gate (`loadtest compare BASELINE CURRENT`, `loadtest ab`): two runs' report.json
and requests.jsonl in (compare_inputs), which metrics regressed significantly and what the
comparison could not have seen (compare, compare_power), and its text and HTML renderings
(compare_report, compare_html)."""
