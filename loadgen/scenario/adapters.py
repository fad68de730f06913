"""`workload.adapters`: each request names one of several LoRA adapters (the body's `model`), as
multi-LoRA serving sees it: many fine-tunes of one base model behind one server.

```yaml
workload:
  adapters:
    names: [sql, chat, code]   # sent as the request's `model`
    distribution: zipf         # uniform (default) or zipf: the k-th name gets 1/k^zipf_s
    zipf_s: 1.0
  # or, by weight:
  adapters:
    weights: {sql: 3, chat: 1}
```

- Give `names:` (drawn uniformly, or by Zipf's law in the order listed) or `weights:` (relative,
  one per adapter), not both. Names are unique; the server must know each (a simulated server's
  `lora.adapters`, vLLM's `--lora-modules`), or its requests fail with 404.
- Each request's adapter is drawn from the plan's own seeded stream (loadgen.traffic.plan_adapters):
  a plan repeats, and a scenario without `adapters:` plans exactly as before. A session's later
  turns keep turn 1's adapter.
- The report gives each adapter's requests, errors and latency (report.json `adapters`), and SLOs
  may hold per adapter (`slo.adapters.<name>`), as per workload class.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from kernel.strict import StrictModel

MAX_ADAPTERS = 10_000
ADAPTER_NAME = r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$"  # model names as servers spell them


class AdaptersSpec(StrictModel):
    names: list[str] | None = Field(default=None, min_length=1, max_length=MAX_ADAPTERS)
    weights: dict[str, float] | None = Field(default=None, min_length=1, max_length=MAX_ADAPTERS)
    distribution: Literal["uniform", "zipf"] = "uniform"
    zipf_s: float = Field(default=1.0, gt=0, le=10)  # Zipf's exponent: rank k is drawn ∝ 1/k^s

    @model_validator(mode="after")
    def _one_list(self) -> AdaptersSpec:
        if (self.names is None) == (self.weights is None):
            raise ValueError("give names: (a list) or weights: (name: weight), one of them")
        if self.weights is not None:
            if self.distribution != "uniform":
                raise ValueError("distribution: zipf draws from names:; weights: give the shares themselves")
            if any(not 0 < weight <= 1e9 for weight in self.weights.values()):
                raise ValueError("weights must be more than 0 and at most 1e9")
        names = self.adapter_names
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"adapter names must be unique; repeated: {', '.join(repeated)}")
        bad = [name for name in names if not _valid(name)]
        if bad:
            raise ValueError(f"adapter name {bad[0]!r}: letters, digits and ._:/- only, at most 200")
        return self

    @property
    def adapter_names(self) -> list[str]:
        return list(self.names) if self.names is not None else list(self.weights or {})

    def probabilities(self) -> np.ndarray:
        """Each name's share of the requests, in the order of `adapter_names`."""
        if self.weights is not None:
            raw = np.array(list(self.weights.values()), dtype=float)
        elif self.distribution == "zipf":
            raw = 1.0 / np.arange(1, len(self.adapter_names) + 1, dtype=float) ** self.zipf_s
        else:
            raw = np.ones(len(self.adapter_names))
        shares: np.ndarray = raw / raw.sum()
        return shares


def _valid(name: str) -> bool:
    return len(name) <= 200 and re.match(ADAPTER_NAME, name) is not None
