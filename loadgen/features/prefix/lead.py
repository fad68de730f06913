"""A request's shared prefix (`workload.prefix`, its spec): the text its prompt begins with, the
slice's lead (loadgen.features.slice.Leads), and the group it is (the record's `prefix_group`).

A prefix begins with a word outside the prompts' vocabulary (PREFIX_MARK, loadgen.inputs.vocabulary),
then its group and its class, then filler: two groups differ within their first four words (so
from the first cache block on, for blocks of 4 tokens or more), and no request's own part (which
begins with its id in the vocabulary's words) begins like a prefix. The texts are cached (the most
recently used): they are the same for many requests.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from loadgen.features.prefix.draws import prefix_group
from loadgen.features.prefix.key import SPEC
from loadgen.features.slice import Asking, Lead
from loadgen.inputs.vocabulary import filled_text, number_words
from loadgen.scenario.workload import Workload

PREFIX_MARK = "system"  # not one of the vocabulary's words: no own part begins with it
# Texts kept: a few prefixes (each `tokens` words: bounded so long ones cannot pile up).
_PREFIXES_KEPT = 64


@lru_cache(maxsize=_PREFIXES_KEPT)
def prefix_text(tokens: int, group: int, request_class: str = "default") -> str:
    """Group `group`'s prefix of class `request_class`: exactly `tokens` words."""
    salt = int.from_bytes(hashlib.blake2b(request_class.encode(), digest_size=4).digest(), "big")
    head = [PREFIX_MARK, *number_words(group, 3), *number_words(salt % 17956, 2)]  # 17956 = 134²
    return filled_text(head, tokens, salt + group)


class PrefixLead:
    """The slice's lead (loadgen.features.slice.Leads)."""

    def lead(self, workload: Workload, asking: Asking) -> Lead | None:
        spec, group = SPEC.of(workload), prefix_group(asking.drawn)
        if spec is None or group is None:
            return None
        return Lead(prefix_text(spec.tokens, group, asking.request_class), group)


PREFIX_LEAD = PrefixLead()
