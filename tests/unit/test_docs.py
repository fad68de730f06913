"""docs/: the reference must say what the code does.

docs/scenario.md's tables (each after a `<!-- schema: Model ... -->` line) must list every key of
those scenario models, no other, with defaults and examples the models accept; report-json.md's
key tables must be what the report model generates; run-folder.md must name every key of a
request record and of run.json; no page may point at the old out-of-repo documents; every
relative link must land on a file and heading that exist.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Annotated, Any, get_args

import pytest
import yaml
from pydantic import BaseModel, Field, TypeAdapter
from pydantic.fields import FieldInfo

from loadgen.collect.records import RequestRecord
from loadgen.inputs.files import BASE_DIR_CONTEXT
from loadgen.reference.record_doc import with_record_table
from loadgen.reference.report_doc import with_tables
from loadgen.rundir.folder import RunMeta
from loadgen.scenario.model import Scenario
from loadgen.scenario.phases import TracePhase
from loadgen.scenario.workload import WorkloadClass
from servers.ort import OrtServerConfig
from servers.pytorch import TorchServerConfig
from tests.cli_helpers import ROOT

DOCS = ROOT / "docs"
SCENARIO_PAGE = DOCS / "scenario.md"
# Defaults the page says in words: each is derived, or a path where loadtest is installed.
PROSE_DEFAULTS = {(TracePhase, "duration"), (OrtServerConfig, "model"), (TorchServerConfig, "model")}
MARKER = re.compile(r"<!-- schema: (.+?) -->")


def scenario_models() -> dict[str, type[BaseModel]]:
    """Every model a scenario is made of, by class name (WorkloadClass: the list form)."""
    found: dict[str, type[BaseModel]] = {}

    def visit(annotation: Any) -> None:
        model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        if model and annotation.__name__ not in found:
            found[annotation.__name__] = annotation
            for field in annotation.model_fields.values():
                visit(field.annotation)
        for argument in get_args(annotation):
            visit(argument)

    visit(Scenario)
    visit(WorkloadClass)
    return found


@dataclasses.dataclass
class Row:
    key: str
    default: str
    example: str


def tables(page: Path) -> dict[tuple[str, ...], list[Row]]:
    """Each marked table: (model names) → its rows (key, default cell, example cell)."""
    found: dict[tuple[str, ...], list[Row]] = {}
    lines = page.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        marker = MARKER.fullmatch(line.strip())
        if not marker:
            continue
        rows = []
        for row in lines[index + 3 :]:  # past the header and the separator
            if not row.startswith("|"):
                break
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
            rows.append(Row(cells[0].strip("`"), cells[2], cells[3]))
        found[tuple(marker.group(1).split())] = rows
    return found


def field_of(model: type[BaseModel], key: str) -> FieldInfo | None:
    return next((f for name, f in model.model_fields.items() if (f.alias or name) == key), None)


def validate(field: FieldInfo, value: Any) -> Any:
    # The field's type and constraints (not its alias, which only a model field can have).
    discriminator = [Field(discriminator=field.discriminator)] if field.discriminator else []
    extras = [*field.metadata, *discriminator]
    # Built at run time: a type form mypy cannot follow.
    form: Any = Annotated[field.annotation, *extras] if extras else field.annotation
    adapter: TypeAdapter[Any] = TypeAdapter(form)
    return adapter.validate_python(value, context={BASE_DIR_CONTEXT: ROOT / "scenarios"})


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    return bool(a == b)


SCENARIO_TABLES = tables(SCENARIO_PAGE)
MODELS = scenario_models()


def test_every_scenario_model_has_a_table_naming_models_that_exist():
    named = [name for names in SCENARIO_TABLES for name in names]
    assert sorted(set(named)) == sorted(MODELS), "tables vs models differ"
    assert len(named) == len(set(named)), "a model has two tables"


@pytest.mark.parametrize("names", list(SCENARIO_TABLES), ids=" ".join)
def test_a_table_lists_exactly_its_models_keys(names: tuple[str, ...]):
    models = [MODELS[name] for name in names]
    rows = [row.key for row in SCENARIO_TABLES[names]]
    keys = {field.alias or name for model in models for name, field in model.model_fields.items()}
    assert len(rows) == len(set(rows)), f"a key is listed twice: {rows}"
    assert set(rows) == keys, f"missing: {sorted(keys - set(rows))}; not keys: {sorted(set(rows) - keys)}"


@pytest.mark.parametrize("names", list(SCENARIO_TABLES), ids=" ".join)
def test_defaults_on_the_page_are_the_models_defaults(names: tuple[str, ...]):
    for row in SCENARIO_TABLES[names]:
        for model in (MODELS[name] for name in names):
            field = field_of(model, row.key)
            if field is None:
                continue
            where = f"{model.__name__}.{row.key}: default cell {row.default!r}"
            if row.default.startswith("required"):
                assert field.is_required(), where
                continue
            assert not field.is_required(), where
            written = re.match(r"`([^`]*)`", row.default)
            if written is None:
                assert (model, row.key) in PROSE_DEFAULTS, f"{where}: give the default as `yaml`"
                continue
            default = field.get_default(call_default_factory=True)
            assert same(validate(field, yaml.safe_load(written.group(1))), default), where


@pytest.mark.parametrize("names", list(SCENARIO_TABLES), ids=" ".join)
def test_examples_on_the_page_are_accepted(names: tuple[str, ...]):
    for row in SCENARIO_TABLES[names]:
        snippet = re.fullmatch(r"`([^`]*)`", row.example)
        assert snippet is not None, f"{row.key}: example {row.example!r} is not one `key: value`"
        parsed = yaml.safe_load(snippet.group(1))
        assert isinstance(parsed, dict) and list(parsed) == [row.key], f"example {row.example!r}"
        fields = [f for f in (field_of(MODELS[name], row.key) for name in names) if f is not None]
        errors = []
        for field in fields:
            try:
                validate(field, parsed[row.key])
                break
            except ValueError as exc:
                errors.append(str(exc))
        else:
            pytest.fail(f"{row.key}: example {row.example!r} is refused: {errors}")


def test_the_report_key_tables_are_current():
    page = DOCS / "report-json.md"
    text = page.read_text(encoding="utf-8")
    assert with_tables(text) == text, (
        "docs/report-json.md's tables are stale: run `python -m loadgen.reference`"
    )


def test_the_run_folder_record_table_is_current():
    page = DOCS / "run-folder.md"
    text = page.read_text(encoding="utf-8")
    assert with_record_table(text) == text, (
        "docs/run-folder.md's requests.jsonl table is stale: run `python -m loadgen.reference`"
    )


def test_the_run_folder_page_names_every_record_and_run_json_key():
    text = (DOCS / "run-folder.md").read_text(encoding="utf-8")
    record = RequestRecord(id=0, phase=0, scheduled_s=0.0, itl_ms=[1.5], cached_tokens=1)
    record_keys = [*record.to_dict(), *record.to_file_dict()]  # itl_ms in memory, itl_us on disk
    meta_keys = [field.name for field in dataclasses.fields(RunMeta)]
    missing = [key for key in [*record_keys, *meta_keys] if f"| `{key}` |" not in text]
    assert not missing, f"docs/run-folder.md does not describe: {missing}"


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_nothing_points_at_the_old_documents_outside_the_repository():
    old = re.compile(r"shared/|\bSCENARIO\.md\b|\bDESIGN\.md\b")
    sources = [*_pages(), *(ROOT / "loadgen").rglob("*.py"), *(ROOT / "servers").rglob("*.py")]
    sources += [*(ROOT / "scenarios").rglob("*.yaml"), *(ROOT / "scenarios").rglob("*.md")]
    hits = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if old.search(line)
    ]
    assert not hits, f"point these at docs/ instead: {hits}"


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces → '-'."""
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_land_on_files_and_headings_that_exist(page: Path):
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path_text, _, anchor = target.partition("#")
        path = (page.parent / path_text).resolve() if path_text else page
        assert path.exists(), f"{page.name}: link to {target}: no such file"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.name}: link to {target}: no such heading"
