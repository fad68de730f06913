"""Self-contained HTML reports: static inline SVG charts (matplotlib), inline CSS, no script.

- `charts`: generic chart builders (line, bar) returning a `Chart` (its SVG and id);
- `page`: the page skeleton (verdict banner, sections, tables, cards);
- `series`: the maths behind the charts (1-s bins, in-flight means, CDFs, downsampling);
- `inputs`: what a page draws beyond report.json; for a long run a uniform sample of its records
  (latency) beside exact per-second counts of all of them (`ChartRecords`, filled in one pass);
- `run_report`: report.html of a run (`write_html`), assembled from the `*_section` modules;
- `compare_html`: compare.html of `loadtest compare`.
"""

import logging

# A fresh install builds matplotlib's font cache once (on the first import of any matplotlib
# module) and, when that is slow, says so on stderr, where a run prints its verdict line.
logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
