"""A slice's part of a request goes only to the classes that ask for it, and its reading of the
answer to every request: a plain request carries nothing of any slice, and an answer that
thinks unasked is still recorded."""

from __future__ import annotations

from loadgen.features import SLICES, attachments, readers
from loadgen.features.asks import NO_ASKS, gather
from loadgen.features.slice import Attached
from loadgen.scenario.model import Workload
from loadgen.traffic.http_send import HeaderSets
from loadgen.wire.answer import StreamResult
from loadgen.wire.apis import wire_api
from loadgen.wire.call import JSON_TYPE, Call, ReasoningAsk, ToolsAsk

PLAIN = Workload()
THINKING = Workload.model_validate({"reasoning": {"tokens": {"kind": "fixed", "value": 7}}})


def test_no_slice_attaches_to_a_plain_class_and_reasoning_to_its_own_only() -> None:
    classes = {"plain": PLAIN, "thinking": THINKING}
    senders = {name: part.senders(classes) for name, part in attachments()}
    assert senders["reasoning"] == frozenset({"thinking"})
    assert all("plain" not in named for named in senders.values())


def test_every_answer_is_read_for_reasoning_asked_or_not() -> None:
    assert [s.name for s in SLICES if s.reads is not None] == ["reasoning"]
    (reader,) = readers()
    plain = StreamResult(chunk_ns=[10, 20], first_answer_ns=10)
    assert dict(reader.fields(plain, True)) == {}
    thought = StreamResult(chunk_ns=[1_000_000, 3_000_000, 4_500_000], reasoning_chunks=2)
    thought.first_answer_ns, thought.last_reasoning_ns = 4_500_000, 3_000_000
    assert dict(reader.fields(thought, True)) == {"reasoning_tokens": 2, "reasoning_ms": 3.5}
    assert dict(reader.fields(thought, False)) == {"reasoning_tokens": 2}  # no stream: no timing


def test_nothing_attached_leaves_the_call_as_built() -> None:
    call = Call(model="m", prompt="p", max_tokens=16, ignore_eos=True, stream=True)
    assert gather([]) is NO_ASKS and NO_ASKS.onto(call) is call


def test_the_asks_of_several_slices_add_their_budgets_and_keep_the_first_of_each_kind() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    thinking = ReasoningAsk("low", 7, "reasoning_content")
    tools = ToolsAsk(({"type": "function", "function": {"name": "f"}},), "auto", True)
    asks = gather(
        [
            Attached(reasoning=thinking, budget=7, think="think_tags"),
            Attached(tools=tools, budget=3),
            Attached(parts=(image,), count=1),
        ]
    )
    call = asks.onto(Call(model="m", prompt="p", max_tokens=16, ignore_eos=True, stream=True))
    assert (call.max_tokens, call.reasoning, call.tools) == (26, thinking, tools)
    assert list(call.content_parts) == [image]
    assert asks.think == "think_tags"


def test_a_request_goes_with_its_apis_content_type_and_the_runs_other_headers() -> None:
    base = {"Content-Type": JSON_TYPE, "Authorization": "Bearer key"}
    sets = HeaderSets(base)
    call = Call(model="m", prompt="p", max_tokens=4, ignore_eos=True, stream=True)
    sent = wire_api("chat").request(call)
    assert sent.content_type == JSON_TYPE and sets.of(sent.content_type) is base
    upload = sets.of("multipart/form-data; boundary=b")
    assert upload is sets.of("multipart/form-data; boundary=b")  # one object: its head made once
    assert upload == {"Content-Type": "multipart/form-data; boundary=b", "Authorization": "Bearer key"}
