"""The committed training corpus of the bundled tokenizer, and how it was generated.

It is committed because standard-library docstrings change between Python releases; the build
reads the file, so the tokenizer does not depend on the Python that builds it.
"""

from __future__ import annotations

import random
from pathlib import Path

from servers.models import MODELS_DIR

SEED = 0  # the seed of every random choice in the build: corpus sentences and weights
CORPUS_PATH = MODELS_DIR / "corpus.txt"
# ---------------------------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------------------------

CORPUS_MODULES = [
    "json",
    "textwrap",
    "string",
    "collections",
    "functools",
    "heapq",
    "bisect",
    "random",
    "statistics",
    "fractions",
    "calendar",
    "difflib",
    "argparse",
    "shutil",
    "pathlib",
    "logging",
    "csv",
    "queue",
    "threading",
    "contextlib",
    "dataclasses",
    "tempfile",
    "zipfile",
    "urllib.parse",
    "pprint",
    "fnmatch",
    "shlex",
    "configparser",
    "subprocess",
    "datetime",
]

_SUBJECTS = [
    "the server", "a client", "the scheduler", "every request", "the load balancer", "our team",
    "the model", "a replica", "the operator", "the queue", "this service", "the cache",
    "the gateway", "a worker", "the cluster", "the engineer", "the benchmark", "each user",
]  # fmt: skip
_VERBS = [
    "answers", "sends", "measures", "waits for", "starts", "stops", "reads", "writes", "counts",
    "checks", "drops", "retries", "streams", "batches", "schedules", "reports", "records",
    "restarts", "accepts", "rejects", "compares", "forgets", "remembers", "explains",
]  # fmt: skip
_OBJECTS = [
    "the first token", "a long prompt", "the latency budget", "every response", "a small batch",
    "the error rate", "the memory graph", "a cold start", "the slowest request", "the report",
    "a new replica", "the token stream", "the request log", "a short answer", "the next level",
    "the warm-up phase", "a timeout", "the throughput curve", "the percentile", "a failure",
]  # fmt: skip
_ADVERBS = [
    "quickly", "slowly", "carefully", "again", "twice", "at night", "under load", "in order",
    "without delay", "every minute", "before noon", "after the deploy", "on time", "at once",
]  # fmt: skip
_CONNECTIVES = ["and then", "but", "because", "while", "so", "although", "until", "before", "after"]
_OPENERS = [
    "Today", "Yesterday", "In the morning", "Later", "Sometimes", "Often", "Meanwhile",
    "At the end of the day", "During the test", "When traffic grows", "If nothing fails",
]  # fmt: skip
_QUESTIONS = [
    "What is the capital of France?", "How many requests per second can one replica serve?",
    "Why did the latency grow?", "Can you summarise the report?", "Where are the logs?",
    "Who owns this service?", "When does the next deploy start?", "Is the cache warm yet?",
]  # fmt: skip


def _clause(rng: random.Random) -> str:
    parts = [rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(_OBJECTS)]
    if rng.random() < 0.5:
        parts.append(rng.choice(_ADVERBS))
    return " ".join(parts)


def _sentence(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.1:
        return rng.choice(_QUESTIONS)
    text = _clause(rng)
    if roll < 0.5:
        text = f"{text} {rng.choice(_CONNECTIVES)} {_clause(rng)}"
    if rng.random() < 0.3:
        text = f"{rng.choice(_OPENERS)}, {text}"
    if rng.random() < 0.2:
        text = f"{text}, {rng.randint(2, 999)} times out of {rng.randint(1000, 9999)}"
    return text[0].upper() + text[1:] + "."


def synthetic_paragraphs(count: int, seed: int = SEED) -> list[str]:
    """Paragraphs of simple English from a fixed grammar and a seeded RNG."""
    rng = random.Random(seed)
    return [" ".join(_sentence(rng) for _ in range(rng.randint(3, 8))) for _ in range(count)]


def _module_docstrings(name: str) -> list[str]:
    import importlib
    import inspect

    module = importlib.import_module(name)
    docs = [inspect.getdoc(module) or ""]
    for attr, obj in sorted(vars(module).items()):
        if attr.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        docs.append(inspect.getdoc(obj) or "")
    return [d for d in docs if d]


def write_corpus(path: Path = CORPUS_PATH) -> int:
    """Regenerate the tokenizer corpus (plain English); returns its size in bytes."""
    import codecs
    import contextlib
    import importlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # importing `this` prints the Zen
        zen = codecs.decode(importlib.import_module("this").s, "rot13")
    sections = [zen]
    for name in CORPUS_MODULES:
        sections.extend(_module_docstrings(name))
    sections.extend(synthetic_paragraphs(300))
    text = "\n\n".join(s.strip() for s in sections) + "\n"
    path.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))
