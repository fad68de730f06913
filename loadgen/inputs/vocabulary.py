"""The words every synthetic prompt is made of (loadgen.traffic.prompts; a slice's shared lead,
loadgen.features.slice.Leads, too): common short English words, about one token
each in typical BPE vocabularies, so a prompt of n words is close to n tokens (the server's usage
field reports the exact count); and a request's own words (its id written in them, then filler).

Pure: the same request id always gives the same text.
"""

from __future__ import annotations

_WORDS = (
    "the of and to in is was for on that with as by at from his her are were this which be "
    "or had not but what all when can said there use an each she do how their if will up "
    "other about out many then them these so some would make like him into time has look two "
    "more go see way could people than first water been call who oil its now find long down "
    "day did get come made may part over new sound take only little work know place year "
    "live me back give most very after thing our just name good man think say great where "
    "help through much before line right too mean old any same tell boy follow came want "
    "show also around form three small "
).split()


WORDS: tuple[str, ...] = tuple(_WORDS)
# A request id written in words takes at least this many (134⁴ ≈ 3·10⁸ ids; more take more).
ID_WORDS = 4


def number_words(number: int, width: int) -> list[str]:
    """`number` ≥ 0 in base len(WORDS), one word a digit, most significant first, at least
    `width` words."""
    base, digits = len(WORDS), list[str]()
    while number or len(digits) < width:
        number, digit = divmod(number, base)
        digits.append(WORDS[digit])
    return digits[::-1]


def prompt_text(tokens: int, request_id: int) -> str:
    """A deterministic prompt of `tokens` words, unique per request id: its first ID_WORDS words
    are the id written in words (so no two requests share a prefix-cache block by accident; the
    filler alone repeats every len(WORDS) ids), then filler varied per request: word i is
    WORDS[(request_id * 7919 + i * 31) % len(WORDS)]."""
    head = number_words(request_id, ID_WORDS)[:tokens]
    if len(head) >= tokens:
        return " ".join(head)
    # Word i of the filler is _STRIDE_ORDER[(start + i) % count]: slices joined in C, no
    # Python step per word (~10 µs saved per 100 words, on every request).
    count = len(WORDS)
    start = (request_id * 7919 * _STRIDE_INVERSE + len(head)) % count
    return " ".join(head) + " " + _filler(start, tokens - len(head))


# WORDS in steps of 31 (31 is prime to len(WORDS)), so that stepping by 31 through WORDS is
# stepping by 1 through this; _STRIDE_INVERSE undoes the step.
_STRIDE_ORDER = [WORDS[(k * 31) % len(WORDS)] for k in range(len(WORDS))]
_STRIDE_INVERSE = pow(31, -1, len(WORDS))


def _filler(start: int, words: int) -> str:
    """`words` words of _STRIDE_ORDER from `start` on, cycling."""
    cycles = 1 + (start + words) // len(_STRIDE_ORDER)
    return " ".join((_STRIDE_ORDER * cycles)[start : start + words])


def filled_text(head: list[str], tokens: int, seed: int) -> str:
    """`head`, then filler words up to exactly `tokens` words (cut when head is longer): a shared
    text (a trace block, a shared prefix) that begins with words of its own."""
    count = len(WORDS)
    start = seed % count
    filler = (WORDS[(start + i * 31) % count] for i in range(max(0, tokens - len(head))))
    return " ".join([*head[:tokens], *filler])
