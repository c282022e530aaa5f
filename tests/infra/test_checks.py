"""cdk-nag's AWS Solutions rules and cfn-lint pass on both synthesised templates."""

from __future__ import annotations

import json
from typing import Any

import pytest

# W3005: CDK adds DependsOn on a function's role policy beside the GetAtt of the role; harmless
CFN_LINT_IGNORED = {"W3005"}
REGIONS = ["us-east-1", "eu-west-1"]


def test_synthesis_passes_cdk_nag_aws_solutions_checks(each_synthesis: Any) -> None:
    # Given both stacks synthesised with AwsSolutionsChecks, Then no error or warning is left unacknowledged
    findings = [
        f"{violation['ruleName']} ({violation['severity']}) at {construct['constructPath']}"
        for report in each_synthesis.validation_report()["pluginReports"]
        for violation in report["violations"]
        for construct in violation["violatingConstructs"]
    ]
    assert findings == [], "\n".join(findings)
    assert each_synthesis.error is None, each_synthesis.error


def test_every_acknowledged_finding_carries_its_reason_into_the_template(each_synthesis: Any) -> None:
    written = {}
    for template in each_synthesis.templates.values():
        for resource in template["Resources"].values():
            for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", []):
                written[rule["id"]] = rule.get("reason", "")
    assert each_synthesis.acknowledged, "the app acknowledges findings through infra.nag.acknowledge"
    for (_, rule), reason in each_synthesis.acknowledged.items():
        assert len(reason) >= 40
        base = rule.split("[")[0]
        assert base in written or rule in written, rule
    assert all(len(reason) >= 40 for reason in written.values())


@pytest.mark.parametrize("stack", ["Stateful", "Stateless"])
def test_cfn_lint_finds_no_error(each_synthesis: Any, stack: str) -> None:
    from cfnlint.api import ManualArgs, lint

    matches = lint(json.dumps(each_synthesis.templates[stack]), config=ManualArgs(regions=REGIONS))
    problems = [
        f"{m.rule.id} {m.rule.severity}: {m.message} ({'/'.join(map(str, m.path))})"
        for m in matches if m.rule.id not in CFN_LINT_IGNORED and m.rule.severity in ("error", "warning")
    ]
    assert problems == [], "\n".join(problems)


def test_synthesis_is_offline_and_quick(each_synthesis: Any) -> None:
    # a guard against a lookup sneaking in (a context query would need credentials and network)
    manifest = json.loads((each_synthesis.outdir / "manifest.json").read_text())
    assert not manifest.get("missing"), manifest.get("missing")


def test_synthesis_leaves_no_cdk_warning_or_error(each_synthesis: Any) -> None:
    annotations = []
    for stack in ("Stateful", "Stateless"):
        metadata = json.loads((each_synthesis.outdir / f"{stack}.metadata.json").read_text())
        for path, entries in metadata.items():
            kinds = ("aws:cdk:warning", "aws:cdk:error")
            annotations += [f"{path}: {e['data']}" for e in entries if e["type"] in kinds]
    assert annotations == [], "\n".join(annotations)
