"""JUnit XML, the test report GitLab, Jenkins and Azure DevOps read (as kubeconform and conftest
write it).

One <testsuite> per cluster, one <testcase> per workload (classname: the cluster), so a CI's
test tab lists the training jobs and marks the ones that fail. Findings about objects that are
no workload (a policy, the inventory, an unreadable file) are testcases of a last suite,
"topogate". A testcase fails when a finding on it fails the check (an error; a warning too
under --strict): one <failure> whose text lists every such finding as file:line:column lines;
findings that do not fail it are in its <system-out>. Each suite has the run's counts line as the
property topogate.summary. No time attributes: the same result
gives the same bytes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict

from topogate.analysis.result import CheckResult
from topogate.core.exitcodes import fails
from topogate.core.findings import Finding
from topogate.report.base import Reporter, counts_line, has_file, settings_lines, sorted_findings, sorted_jobs

OTHER_SUITE = "topogate"
# XML 1.0 cannot hold these at all, not even escaped: a message quoting a hostile file name
# would make the whole report unreadable. They are shown as \\xNN instead.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(s: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}", s)


def finding_text(f: Finding) -> str:
    where = f"{f.file}:{f.line}:{f.column}" if has_file(f.file) else f.object
    return f"{where}: {f.severity} {f.rule} {f.name}: {f.message}"


class JunitReporter(Reporter):
    name = "junit"
    description = "JUnit XML for GitLab, Jenkins and Azure DevOps test reports"

    def _fails(self, f: Finding) -> bool:
        return fails(f.severity, self.strict)

    def render(self, result: CheckResult) -> str:
        by_object: dict[str, list[Finding]] = defaultdict(list)
        for f in sorted_findings(result):
            by_object[f.object].append(f)
        suites: dict[str, list[str]] = defaultdict(list)
        for job in sorted_jobs(result):
            suites[job.cluster].append(job.object)
        workloads = {j.object for j in result.jobs}
        others = sorted(o for o in by_object if o not in workloads)
        order = [(name, suites[name]) for name in sorted(suites)]
        if others or not order:
            order.append((OTHER_SUITE, others))
        summary = _text(counts_line(result))
        root = ET.Element("testsuites", {"name": "topogate"})
        total = failed = 0
        for suite_name, objects in order:
            suite = ET.SubElement(root, "testsuite", {"name": _text(suite_name)})
            # The counts line (what --select/--ignore, waivers and annotations hid included),
            # as a property: test-report viewers show them, and every suite carries the run's.
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", {"name": "topogate.summary", "value": summary})
            # The settings file used, and one property per setting that narrowed the check.
            for i, line in enumerate(settings_lines(result)):
                ET.SubElement(props, "property", {"name": "topogate.narrowed" if i else "topogate.settings",
                                                  "value": _text(line.strip())})
            suite_failed = 0
            for obj in objects:
                case = ET.SubElement(suite, "testcase", {"name": _text(obj), "classname": _text(suite_name)})
                failing = [f for f in by_object.get(obj, []) if self._fails(f)]
                rest = [f for f in by_object.get(obj, []) if not self._fails(f)]
                if failing:
                    suite_failed += 1
                    first = failing[0]
                    more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
                    # its own name: `summary` is the counts line every later suite carries too
                    headline = (first.message.splitlines() or [""])[0]
                    failure = ET.SubElement(case, "failure", {
                        "message": _text(f"{first.rule} {first.name}: {headline}{more}"), "type": first.rule})
                    failure.text = _text("\n".join(finding_text(f) for f in failing))
                if rest:
                    ET.SubElement(case, "system-out").text = _text("\n".join(finding_text(f) for f in rest))
            suite.set("tests", str(len(objects)))
            suite.set("failures", str(suite_failed))
            suite.set("errors", "0")
            total += len(objects)
            failed += suite_failed
        root.set("tests", str(total))
        root.set("failures", str(failed))
        root.set("errors", "0")
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
