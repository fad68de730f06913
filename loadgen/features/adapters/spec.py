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
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field, model_validator

from loadgen.inputs.files import field_error
from loadgen.scenario.slice_model import SliceSpec

if TYPE_CHECKING:
    from loadgen.scenario.model import Scenario

MAX_ADAPTERS = 10_000
ADAPTER_NAME = r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$"  # model names as servers spell them


class AdaptersSpec(SliceSpec):
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

    @classmethod
    def fits_scenario(cls, scenario: Scenario, specs: list[SliceSpec]) -> None:
        """SLOs name adapters the workload sends; a simulated server serves every one it sends."""
        sent = [name for spec in specs if isinstance(spec, AdaptersSpec) for name in spec.adapter_names]
        unknown = [name for name in scenario.slo.adapters if name not in sent]
        if unknown:
            message = f"unknown adapter '{unknown[0]}'; the workload's adapters: {', '.join(sent) or 'none'}"
            raise field_error(("slo", "adapters", unknown[0]), message, unknown[0])
        if getattr(scenario.server, "kind", None) == "simulated" and sent:
            lora = getattr(scenario.server, "lora", None)
            served = list(lora.adapters) if lora is not None else []
            missing = [name for name in dict.fromkeys(sent) if name not in served]
            if missing:
                message = (
                    f"the simulated server serves no adapter '{missing[0]}': "
                    "list every adapter the workload names in server.lora.adapters"
                )
                raise field_error(("server", "lora", "adapters"), message, served)

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
