"""junit.xml: one test case per SLO (and per evaluator check), so CI systems show the gate like a
test run."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from loadgen.evaluate.slo import SLOResult
from loadgen.fmt import format_number
from loadgen.report.evaluation_junit import evaluation_cases
from loadgen.report.model import Report

FILENAME = "junit.xml"


def build_junit(report: Report) -> ET.Element:
    name = report.name
    slos = report.slo
    is_error = report.verdict == "error"
    cases = evaluation_cases(report)
    failures = sum(1 for slo in slos if not slo.passed) + sum(1 for c in cases if c.outcome == "failed")
    skipped = sum(1 for case in cases if case.outcome == "skipped")
    suites = ET.Element("testsuites", name="loadtest")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=name,
        tests=str(len(slos) + len(cases) + int(is_error)),
        failures=str(failures),
        errors=str(int(is_error)),
        skipped=str(skipped),
        time=format_number(report.duration_s),
        timestamp=report.started_at,
    )
    for slo in slos:
        case = ET.SubElement(suite, "testcase", classname=f"loadtest.{name}", name=slo.name, time="0")
        text = SLOResult(
            slo.name, slo.threshold, slo.observed, slo.unit, slo.passed, slo.op, slo.note
        ).describe()
        if not slo.passed:
            failure = ET.SubElement(case, "failure", message=text, type="SLOFailure")
            failure.text = text
        else:
            ET.SubElement(case, "system-out").text = text
    for evaluation in cases:
        case = ET.SubElement(suite, "testcase", classname=f"loadtest.{name}.evaluator", name=evaluation.name)
        case.set("time", "0")
        if evaluation.outcome == "failed":
            failure = ET.SubElement(case, "failure", message=evaluation.text, type="EvaluatorFailure")
            failure.text = evaluation.text
        elif evaluation.outcome == "skipped":
            ET.SubElement(case, "skipped", message=evaluation.text)
        else:
            ET.SubElement(case, "system-out").text = evaluation.text
    if is_error:
        # The run itself failed or cannot be trusted: shown as an errored test, not an SLO failure.
        case = ET.SubElement(suite, "testcase", classname=f"loadtest.{name}", name="run", time="0")
        error = ET.SubElement(case, "error", message=report.reason, type="RunError")
        error.text = report.reason
    return suites


def render_junit(report: Report) -> str:
    root = build_junit(report)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: Report, run_dir: Path) -> Path:
    path = run_dir / FILENAME
    path.write_text(render_junit(report), encoding="utf-8")
    return path
