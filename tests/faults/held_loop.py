"""`loadtest run` with its own gevent loop held on purpose (tests/faults/test_client_stalls.py).

    python tests/faults/held_loop.py OUT_DIR SPEC -- run SCENARIO --out OUT_DIR ...

SPEC: `AFTER:HOLD_MS[xTIMES/EVERY_MS][@CORE],...` — once requests.jsonl under OUT_DIR holds
AFTER records, a greenlet holds the loop for HOLD_MS (the unpatched time.sleep: nothing else runs,
as in a GC pass or a parse that does not yield), TIMES times, EVERY_MS apart; with `@CORE` the
machine takes CORE instead for as long (tests/faults/stolen_core.py: the load generator, and
everything else there, waits). A real stall comes when it comes; this is the one way to put one
where a test needs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gevent import monkey

monkey.patch_all()

import gevent  # noqa: E402  (after the patch, as the CLI itself does)

from loadgen.cli.main import main  # noqa: E402

_sleep = monkey.get_original("time", "sleep")


def _records(out: Path) -> int:
    files = list(out.glob("*/requests.jsonl"))
    return sum(1 for _ in files[0].open("rb")) if files else 0


def hold_loop(out: Path, after: int, hold_ms: float, times: int, every_ms: float, core: int | None) -> None:
    """Wait (yielding) for `after` records, then hold the loop (or steal `core`) `times` times."""
    while _records(out) < after:
        gevent.sleep(0.02)
    if core is not None:
        stealer = Path(__file__).with_name("stolen_core.py")
        args = [str(core), str(hold_ms), str(times), str(every_ms)]
        subprocess.run([sys.executable, str(stealer), *args], check=True, timeout=60)
        return
    for _ in range(times):
        _sleep(hold_ms / 1000)  # the loop is held: no send, no read, no timer runs meanwhile
        gevent.sleep(max(0.0, every_ms - hold_ms) / 1000)


def parse(spec: str) -> list[tuple[int, float, int, float, int | None]]:
    holds = []
    for item in spec.split(","):
        item, _, core = item.partition("@")
        after, _, rest = item.partition(":")
        hold, _, repeat = rest.partition("x")
        times, _, every = repeat.partition("/") if repeat else ("1", "", "0")
        holds.append((int(after), float(hold), int(times), float(every or 0), int(core) if core else None))
    return holds


if __name__ == "__main__":
    out, spec, separator, *argv = sys.argv[1:]
    assert separator == "--", __doc__
    for after, hold, times, every, core in parse(spec):
        gevent.spawn(hold_loop, Path(out), after, hold, times, every, core).name = "held-loop"
    sys.exit(main(argv))
