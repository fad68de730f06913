"""Multi-turn sessions (`workload.sessions`: key, spec): each arrival starts a session whose turns,
and an agent's steps within a turn, each follow the answer before. The key's model is the
slice's; the runtime that releases a follow-up when an answer arrives is the core's
(loadgen.scenario.follow_ups finds the key by its model, loadgen.traffic.session_book runs it)."""

from __future__ import annotations

from loadgen.features.sessions.key import SPEC
from loadgen.features.slice import Slice

SESSIONS = Slice("sessions", {}, None, spec=SPEC, report="loadgen.features.sessions.report")
