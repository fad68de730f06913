"""JSON Schemas (draft 2020-12) for scenario.yaml and report.json, generated from the models.

The scenario models parse units in before-validators (`20s`, `1%`, `100KB`, `10MB/min`, core
lists like `0-2,5`); pydantic alone would describe those fields by the parsed type (a number),
and an editor would then flag every `duration: 20s`. The generator below describes each as the
number *or* the string with a unit that the parser takes, so yaml-language-server validates and
completes scenarios as the loader does. Discriminated unions come out as `oneOf` whose members
each fix `kind` with a `const`, which editors use to pick the member and complete `kind:`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from kernel import units
from loadgen.report.model import Report
from loadgen.scenario.model import Scenario
from servers import cpus

SchemaName = Literal["scenario", "report"]
SCHEMA_NAMES: tuple[SchemaName, ...] = ("scenario", "report")
# Where the checked-in copies live, relative to the repository root.
SCHEMA_DIR = Path("docs") / "schema"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
REGENERATE = "python -m loadgen.reference"

_NUMBER = r"[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?"
_SIZE = rf"{_NUMBER}\s*({'|'.join(units._SIZE_UNITS)})"
_CORES = r"[0-9]+(-[0-9]+)?"


def _number_or_text(number: JsonSchemaValue, pattern: str, example: str) -> JsonSchemaValue:
    text = {"type": "string", "pattern": rf"^\s*{pattern}\s*$", "examples": [example]}
    return {"anyOf": [{"type": "number", **number}, text]}


def _duration() -> JsonSchemaValue:
    names = "|".join(units._DURATION_UNITS)
    number = {"minimum": 0, "maximum": units.MAX_DURATION_S}
    schema = _number_or_text(number, rf"{_NUMBER}\s*({names})", "250ms")
    schema["description"] = f"seconds, or a number with a unit ({', '.join(units._DURATION_UNITS)})"
    return schema


def _size() -> JsonSchemaValue:
    schema = _number_or_text({"minimum": 0, "maximum": units.MAX_SIZE}, _SIZE, "1MB")
    schema["description"] = "bytes, or a number with a unit (binary: 1KB = 1024 B)"
    return schema


def _fraction() -> JsonSchemaValue:
    percent = r"(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?|\.[0-9]+)\s*%"  # 0% to 100%
    schema = _number_or_text({"minimum": 0, "maximum": 1}, percent, "1%")
    schema["description"] = "a fraction (0.01) or a percentage ('1%')"
    return schema


def _growth_rate() -> JsonSchemaValue:
    per = "|".join(units._PER_UNITS)
    number = {"minimum": -units.MAX_GROWTH_RATE, "maximum": units.MAX_GROWTH_RATE}
    schema = _number_or_text(number, rf"{_SIZE}\s*/\s*({per})", "10MB/min")
    schema["description"] = "MB per minute, or a size per time ('10MB/min', '1GB/h')"
    return schema


def _cpu_setting() -> JsonSchemaValue:
    core = {"type": "integer", "minimum": 0, "maximum": 4095}
    item = {"anyOf": [core, {"type": "string", "pattern": rf"^{_CORES}$"}]}
    return {
        "anyOf": [
            {"const": "auto"},
            {"type": "null"},
            core,
            {"type": "string", "pattern": rf"^\s*{_CORES}(\s*,\s*{_CORES})*\s*$", "examples": ["0-2,5"]},
            {"type": "array", "items": item, "minItems": 1},
        ],
        "description": "auto, null (not pinned), or cores: '0-2,5' or [0, 1]",
    }


# The parsers of kernel.units and servers.cpus, and what each accepts as JSON.
_UNIT_SCHEMAS: dict[Callable[[object], object], Callable[[], JsonSchemaValue]] = {
    units.parse_duration: _duration,
    units.parse_size: _size,
    units.parse_fraction: _fraction,
    units.parse_growth_rate: _growth_rate,
    cpus.parse_cpu_setting: _cpu_setting,
}
# Bounds pydantic leaves under its own names when a parser sits between them and the number.
_BOUNDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}


class _ScenarioSchema(GenerateJsonSchema):
    def function_before_schema(self, schema: core_schema.BeforeValidatorFunctionSchema) -> JsonSchemaValue:
        special = _UNIT_SCHEMAS.get(schema["function"]["function"])  # type: ignore[arg-type]
        return special() if special is not None else super().function_before_schema(schema)

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        # An absolute path default (the bundled model) is where this copy of loadtest lives: not
        # a default any scenario could write, and it would differ between checkouts.
        default = schema.get("default")
        if isinstance(default, Path) and default.is_absolute():
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)


def _fix_bounds(node: Any) -> Any:
    """`{"gt": 0, "anyOf": [number, string]}` → the bound as JSON Schema says it, on the number."""
    if isinstance(node, list):
        return [_fix_bounds(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _fix_bounds(value) for key, value in node.items()}
    bounds = {_BOUNDS[key]: node.pop(key) for key in list(node) if key in _BOUNDS}
    if bounds:
        numbers = [m for m in node.get("anyOf", []) if m.get("type") in ("number", "integer")]
        for target in numbers or [node]:
            target.update(bounds)
    return node


def _schema(model: type[BaseModel], generator: type[GenerateJsonSchema], title: str) -> JsonSchemaValue:
    body = _fix_bounds(model.model_json_schema(mode="validation", schema_generator=generator))
    body["title"] = title
    return {"$schema": DRAFT, **body}


def schema(name: SchemaName) -> JsonSchemaValue:
    """The JSON Schema of scenario.yaml or report.json, as a dict."""
    if name == "scenario":
        return _schema(Scenario, _ScenarioSchema, "loadtest scenario")
    return _schema(Report, GenerateJsonSchema, "loadtest report.json")


def render(name: SchemaName) -> str:
    """The schema as the checked-in file holds it: keys in the models' field order."""
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


def schema_path(name: SchemaName, root: Path = Path()) -> Path:
    return root / SCHEMA_DIR / f"{name}.schema.json"


def stale(root: Path) -> list[Path]:
    """The checked-in schema files under `root` that differ from what the models give now."""
    paths = [schema_path(name, root) for name in SCHEMA_NAMES]
    return [
        path
        for name, path in zip(SCHEMA_NAMES, paths, strict=True)
        if not path.exists() or path.read_text(encoding="utf-8") != render(name)
    ]


def write_all(root: Path) -> list[Path]:
    """Rewrite docs/schema/*.schema.json under `root`; returns the files written."""
    written = []
    for name in SCHEMA_NAMES:
        path = schema_path(name, root)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(name), encoding="utf-8")
        written.append(path)
    return written


def modeline(scenario_file: Path, root: Path) -> str:
    """The first line that points yaml-language-server at the schema, relative to the file."""
    relative = Path(*[".."] * (len(scenario_file.resolve().relative_to(root.resolve()).parts) - 1))
    target = (relative / SCHEMA_DIR / "scenario.schema.json").as_posix()
    return f"# yaml-language-server: $schema={target}"
