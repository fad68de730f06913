"""run.json's sections (loadgen/rundir/run_json.py) and the wire's windows are written as they
were before they had types: a section made from a dataclass holds its fields, in their order,
as dataclasses.asdict gave them."""

from __future__ import annotations

from dataclasses import asdict

from loadgen.collect.windows import PhaseWindow
from loadgen.distributed.protocol import decode_windows, encode_windows
from loadgen.environments.comparison_model import DeclaredPower, EnvironmentMeta
from loadgen.evaluate.curve import Over
from loadgen.evaluate.level_results import LevelWindow
from loadgen.traffic.stall_watch import GcTally


def test_a_level_window_is_written_as_its_fields_in_order() -> None:
    window = LevelWindow(3, 8.0, Over.RATE, 1.5, 4.5, 8.0, 1, "verify", 2, True, 41.0)
    assert list(window.to_dict().items()) == list(asdict(window).items())
    assert LevelWindow.from_dict(window.to_dict()) == window


def test_an_environment_is_written_as_its_fields_in_order() -> None:
    declared = EnvironmentMeta("a", "notes", 0.05, True, DeclaredPower(100.0, "datasheet"))
    bare = EnvironmentMeta("b", "", None, False, None)
    for meta in (declared, bare):
        assert list(meta.to_dict().items()) == list(asdict(meta).items())
    assert list(declared.to_dict()["power"] or {}) == ["watts_per_replica", "source"]


def test_a_gc_tally_is_written_as_its_fields_in_order() -> None:
    tally = GcTally(4, 2.5, 1.25)
    assert list(tally.to_dict().items()) == list(asdict(tally).items())


def test_phase_windows_cross_the_wire_as_their_fields() -> None:
    windows = [PhaseWindow(0, "poisson", 20.0, 1.0, 5.0), PhaseWindow(1, "rate", 0.0, 5.0, 9.5)]
    encoded = encode_windows(windows)
    assert [list(data.items()) for data in encoded] == [list(asdict(window).items()) for window in windows]
    assert decode_windows(encoded) == windows
