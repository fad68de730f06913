import pytest

from kernel.units import parse_duration, parse_fraction, parse_growth_rate, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("50ms", 0.05), ("2s", 2), ("1.5m", 90), ("1h", 3600), ("250us", 0.00025), (3, 3), (0.5, 0.5)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["fast", "10", "5 parsecs", "-1s", True, None])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_sizes_fractions_and_growth():
    assert parse_size("100KB") == 102_400
    assert parse_size("2MB") == 2 * 1024**2
    assert parse_fraction("1%") == pytest.approx(0.01)
    assert parse_fraction(0.25) == 0.25
    with pytest.raises(ValueError):
        parse_fraction("150%")
    assert parse_growth_rate("10MB/min") == pytest.approx(10)
    assert parse_growth_rate("600MB/h") == pytest.approx(10)
    # 100 KB per request at 50 req/s is the ~293 MB/min the tracker quotes
    assert parse_size("100KB") * 50 * 60 / 1024**2 == pytest.approx(292.97, abs=0.01)
