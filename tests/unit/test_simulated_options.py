"""The simulated server's options are defined once (servers.simulated.SimulatedOptions): the
flags its adapter starts it with are read back by its command line into the same options, and
a flag out of bounds is refused with the model's own words, named as the flag."""

from __future__ import annotations

import pytest

from servers.simulated import SimulatedOptions, SimulatedServerConfig, option_argv, parse_args


def test_the_adapters_flags_give_the_scenarios_options_back() -> None:
    config = SimulatedServerConfig.model_validate(
        {
            "kind": "simulated",
            "ttft": "20ms",
            "slots": 3,
            "leak_per_request": "1KB",
            "model": "m-7",
            "infer_per_item": "1ms",
            "infer_max_batch_size": 8,
            "lora": {"adapters": ["a", "b"], "max_loras": 1, "load_time": "50ms"},
        }
    )
    argv = option_argv(config)
    assert "--ttft=0.02" in argv and "--lora-adapters=a,b" in argv and "--leak-per-request=1024" in argv
    assert "--infer-per-item=0.001" in argv and "--infer-max-batch-size=8" in argv
    _, options = parse_args(["--port=0", *argv])
    assert options == SimulatedOptions.model_validate(
        config.model_dump(include=set(SimulatedOptions.model_fields))
    )
    assert options.lora is not None and options.lora.load_time == 0.05


def test_flags_read_units_and_defaults_as_the_scenario_does() -> None:
    args, options = parse_args(["--ttft", "7ms", "--itl", "0.5", "--prefix-cache-blocks", "4"])
    assert (options.ttft, options.itl, options.prefix_cache_blocks) == (0.007, 0.5, 4)
    assert options.slots == SimulatedOptions().slots and options.lora is None and args.port == 8000


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--slots", "0"], "--slots: Input should be greater than or equal to 1"),
        (["--ttft", "fast"], "--ttft: Value error"),
        (["--lora-max-loras", "2"], "--lora-adapters: Field required"),
        (["--infer-max-batch-size", "0"], "--infer-max-batch-size: Input should be greater than or equal"),
        (["--infer-base", "soon"], "--infer-base: Value error"),
    ],
)
def test_a_bad_flag_is_refused_by_name(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert says in capsys.readouterr().err
