"""`python -m loadgen.reference [ROOT]`: after a change to a scenario or report model, rewrite what
is generated from them in a checkout (default: the one this package is in): docs/schema/*.json,
the key tables of docs/report-json.md and the requests.jsonl key table of docs/run-folder.md."""

from __future__ import annotations

import sys
from pathlib import Path

from loadgen.reference.record_doc import with_record_table
from loadgen.reference.report_doc import with_tables
from loadgen.reference.schemas import write_all

REPORT_PAGE = Path("docs") / "report-json.md"
RUN_FOLDER_PAGE = Path("docs") / "run-folder.md"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[2]
    page = root / REPORT_PAGE
    if not page.is_file():
        print(f"python -m loadgen.reference: no {REPORT_PAGE} in {root}: give the checkout", file=sys.stderr)
        return 2
    written = write_all(root)
    page.write_text(with_tables(page.read_text(encoding="utf-8")), encoding="utf-8")
    folder_page = root / RUN_FOLDER_PAGE
    folder_page.write_text(with_record_table(folder_page.read_text(encoding="utf-8")), encoding="utf-8")
    for path in [*written, page, folder_page]:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
