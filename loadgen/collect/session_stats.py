"""Multi-turn sessions' figures (`workload.sessions`): report.json's `metrics.sessions`.

Kept in a GroupStats (loadgen.collect.run_stats) as simple mergeable values, made only once a
session's record is seen (a run without sessions keeps nothing more):
- its counts (`feature_counts["sessions"]`): per turn index k, the turns k sent (`turn:k`: their
  user messages), every request of turn k (`requests:k`: with an agent's steps) and the turns k
  answered (`ok:k`: a final answer, not one followed by another step); the failed requests
  (`failed`: each ends its session); sessions completed (their last planned turn answered), the
  later requests sent (`later_sent`: achieved_rate counts sessions, the rate the arrival process
  sets), and an agent's steps and the calls they answered (`steps`, `followed`);
- digests in `digests`: TTFT and e2e per turn index (`turn:k:ttft_ms`, `turn:k:e2e_ms`, from the
  turn's due time, as `ttft_ms`), and `session_e2e_ms`: from the session's turn 1 due time to its
  last turn's end, for each completed session. Every record carries its session's turn count and
  start, so a session is closed, and timed, from its last record alone: nothing is held per open
  session, and a worker's statistics merge as sums.

Sessions started are turn 1's records; a session whose turn failed or was cancelled ended there
(`ended`); any other that did not complete was cut (its next turn would have been due past the
linger bound, or the run stopped). Turns completed per session: the sessions with exactly k turns
answered are ok:k − ok:k+1 (a session's turns are answered in order).
"""

from __future__ import annotations

import numpy as np

from loadgen.collect.columns import OK, Columns
from loadgen.collect.digest import Digest
from loadgen.collect.feature_stats import (
    ChunkValues,
    FeatureStats,
    Group,
    count,
    counts_of,
    merge_counts,
    seen_counts,
    short,
)
from loadgen.collect.metrics_parts import AgentPart, SessionsPart

SESSION_E2E = "session_e2e_ms"
TOOL_WAIT = "tool_wait_ms"
_TURN = "turn:"

KEY = "sessions"  # its object under report.json's `metrics`, and its counts' name


def add_sessions(group: Group, cols: Columns, rows: np.ndarray, chunk: ChunkValues) -> None:
    """Take in the selected rows' session figures."""
    latencies = chunk.latencies
    turn = cols.turn[rows]
    mine = turn > 0
    if not mine.any():
        return
    counts, digests, budget = counts_of(group, KEY), group.digests, group.budget
    ok = cols.status[rows] == OK
    sent = ~np.isnan(cols.sent[rows])
    step, followed = cols.step[rows], cols.followed[rows]
    # later requests: later turns, and an agent's steps (turn 1's too)
    count(counts, "later_sent", int((sent & ((turn > 1) | (step > 0))).sum()))
    count(counts, "failed", int((mine & ~ok).sum()))  # each failure ends its session
    for k in np.unique(turn[mine]).tolist():
        at = turn == k
        count(counts, f"turn:{k}", int((at & (step == 0)).sum()))  # the turn's user message
        count(counts, f"requests:{k}", int(at.sum()))  # with an agent's steps
        count(counts, f"ok:{k}", int((at & ok & ~followed).sum()))  # the turn answered in the end
        for name in ("ttft_ms", "e2e_ms"):
            values = latencies[name][at]
            digests.setdefault(f"{_TURN}{k}:{name}", Digest(budget)).add(values[~np.isnan(values)])
    if (step > 0).any() or followed.any():
        _add_agent(group, cols, rows, step, followed)
    last = mine & ok & ~followed & (turn == cols.session_turns[rows])
    count(counts, "completed", int(last.sum()))
    if last.any() or SESSION_E2E in digests:
        took = (cols.done[rows][last] - cols.session_start[rows][last]) * 1000.0
        digests.setdefault(SESSION_E2E, Digest(budget)).add(took[~np.isnan(took)])


def _add_agent(group: Group, cols: Columns, rows: np.ndarray, step: np.ndarray, followed: np.ndarray) -> None:
    """An agent session's steps (requests after a tool result), the calls answered by one, and
    the tool latencies waited."""
    count(counts_of(group, KEY), "steps", int((step > 0).sum()))
    count(counts_of(group, KEY), "followed", int(followed.sum()))
    waits = cols.tool_wait_ms[rows]
    group.digests.setdefault(TOOL_WAIT, Digest(group.budget)).add(waits[~np.isnan(waits)])


def merge_sessions(group: Group, other: Group) -> None:
    merge_counts(group, other, KEY)
    for name, digest in other.digests.items():
        if name.startswith(_TURN) or name in (SESSION_E2E, TOOL_WAIT):
            group.digests.setdefault(name, Digest(group.budget)).merge(digest)


def later_sent(group: Group) -> int:
    """The turns after a session's first that were sent (0 without sessions)."""
    return seen_counts(group, KEY).get("later_sent", 0)


def session_metrics(group: Group, elapsed_s: float) -> SessionsPart | None:
    """`metrics.sessions`; None when the group saw no session."""
    counts = seen_counts(group, KEY)
    if not counts:
        return None
    turns = sorted(int(key[len("turn:") :]) for key in counts if key.startswith("turn:"))
    started = counts.get("turn:1", 0)
    answered = {k: counts.get(f"ok:{k}", 0) for k in turns}
    ended = counts.get("failed", 0)
    completed = counts.get("completed", 0)
    exactly = {0: started - answered.get(1, 0)} | {k: answered[k] - answered.get(k + 1, 0) for k in turns}
    requests_sent = group.sent
    agent: AgentPart | None = None
    if "steps" in counts or "followed" in counts:
        agent = {
            "steps": counts.get("steps", 0),
            "steps_per_session": counts.get("steps", 0) / started if started else None,
            "tool_wait_ms": group.digests.get(TOOL_WAIT, Digest(group.budget)).percentiles(),
        }
    result: SessionsPart = {
        "started": started,
        "completed": completed,
        "ended": ended,
        "cut": max(0, started - completed - ended),
        "requests_per_s": requests_sent / elapsed_s if elapsed_s > 0 else None,
        "turns_completed_mean": sum(answered.values()) / started if started else None,
        "turns_completed": {str(k): n for k, n in exactly.items() if n},
        "session_e2e_ms": group.digests.get(SESSION_E2E, Digest(group.budget)).percentiles(),
        "per_turn": [
            {
                "turn": k,
                "requests": counts.get(f"requests:{k}", counts.get(f"turn:{k}", 0)),
                "ttft_ms": short(group.digests[f"{_TURN}{k}:ttft_ms"]),
                "e2e_ms": short(group.digests[f"{_TURN}{k}:e2e_ms"]),
            }
            for k in turns
        ],
    }
    if agent is not None:
        result["agent"] = agent
    return result


SESSION_STATS = FeatureStats(
    KEY, add_sessions, merge_sessions, session_metrics, unpaced_sent=later_sent, legacy="session_counts"
)
