"""The Lambda functions: packaging, settings, and one least-privilege role each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.config import FUNCTIONS_DIR, LAMBDA_PYTHON
from infra.layer_build import runtime_python

FUNCTIONS = ("api", "mcp", "authorizer", "indexer", "summarise", "compaction")
DATA_ACTION_PREFIXES = ("dynamodb:", "s3:", "aoss:", "states:", "bedrock:", "sqs:", "lambda:")
# list-style calls without resource-level permissions, granted on "*" by design (see infra/nag.py reasons)
NON_RESOURCE_ACTIONS = {"dynamodb:ListStreams"}
# every function's settings; what some functions add is checked against their adapters in test_function_containers
SETTINGS = ("AGENTMEM_TABLE", "AGENTMEM_JOURNAL_BUCKET", "AGENTMEM_WORKSPACE_BUCKET")


def _functions(synthesis: Any) -> dict[str, dict[str, Any]]:
    return synthesis.resources("Stateless", "AWS::Lambda::Function")


LOGICAL_PREFIX = {
    "api": "ApiFunction", "mcp": "ApiMcpFunction", "authorizer": "ApiAuthorizerFunction", "indexer": "IndexerFunction",
    "summarise": "SummariesSummariseFunction", "compaction": "CompactionFunction",
}


def _by_folder(synthesis: Any) -> dict[str, dict[str, Any]]:
    """Each function by its folder under functions/."""
    functions = _functions(synthesis)
    return {
        name: next(f for logical_id, f in functions.items() if logical_id.startswith(prefix))
        for name, prefix in LOGICAL_PREFIX.items()
    }


def _staged(synthesis: Any, function: dict[str, Any]) -> Path:
    return synthesis.outdir / ("asset." + function["Properties"]["Code"]["S3Key"].removesuffix(".zip"))


def test_there_is_one_function_per_folder(synthesis: Any) -> None:
    assert len(_functions(synthesis)) == len(FUNCTIONS)
    assert set(_by_folder(synthesis)) == set(FUNCTIONS)


def test_the_runtime_is_a_python_newer_than_311_whose_support_outlasts_it() -> None:
    # Lambda ends Python 3.11 on 2027-06-30; the functions run 3.12 or 3.13 (3.13: supported to 2029-06-30)
    assert LAMBDA_PYTHON in ("3.12", "3.13")


def test_functions_run_the_lambda_python_on_arm64_from_their_folder(synthesis: Any) -> None:
    for logical_id, function in _functions(synthesis).items():
        props = function["Properties"]
        assert props["Runtime"] == f"python{LAMBDA_PYTHON}", logical_id
        assert props["Architectures"] == ["arm64"], logical_id
        assert props["Handler"] == "handler.lambda_handler", logical_id
        assert props["TracingConfig"] == {"Mode": "Active"}, logical_id


def _layer_ids(synthesis: Any) -> dict[str, str]:
    """"core", "deps" → the layer's logical id."""
    layers = synthesis.resources("Stateless", "AWS::Lambda::LayerVersion")
    prefixes = {"core": "LayersCore", "deps": "LayersDeps"}
    return {name: next(i for i in layers if i.startswith(prefix)) for name, prefix in prefixes.items()}


def test_functions_use_the_package_layer_and_the_dependency_layer(synthesis: Any) -> None:
    # Given the stack's layers, Then there are two, and every function has both and no other: the MCP
    # function too, which speaks MCP without the SDK (no layer of the SDK's)
    layers = synthesis.resources("Stateless", "AWS::Lambda::LayerVersion")
    assert len(layers) == 2
    for layer in layers.values():
        assert layer["Properties"]["CompatibleRuntimes"] == [f"python{LAMBDA_PYTHON}"]
        assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    ids = _layer_ids(synthesis)
    for name, function in _by_folder(synthesis).items():
        used = [ref["Ref"] for ref in function["Properties"]["Layers"]]
        assert used == [ids["core"], ids["deps"]], name


def test_the_mcp_function_runs_the_api_handler() -> None:
    # functions/mcp/handler.py re-exports the API's handler (it serves every route, /v1/mcp included)
    from agentmem.api.app import lambda_handler

    from functions.mcp.handler import lambda_handler as mcp_handler

    assert mcp_handler is lambda_handler


def test_the_mcp_function_has_the_api_timeout_and_memory(synthesis: Any) -> None:
    functions = _by_folder(synthesis)
    mcp, api = functions["mcp"]["Properties"], functions["api"]["Properties"]
    assert mcp["Timeout"] == api["Timeout"] == 29  # API Gateway's integration timeout
    assert mcp["MemorySize"] == 1024


def test_function_assets_hold_only_their_own_folder(synthesis: Any) -> None:
    for name, function in _by_folder(synthesis).items():
        folder = _staged(synthesis, function)
        staged = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
        source = sorted(
            str(p.relative_to(FUNCTIONS_DIR / name)) for p in (FUNCTIONS_DIR / name).rglob("*")
            if "__pycache__" not in p.parts
        )
        assert staged == source, name


def test_package_layer_is_the_agentmem_package_compiled_for_the_runtime_or_says_it_is_not(synthesis: Any) -> None:
    # Given the staged layer assets, Then the package layer holds agentmem, with bytecode of the runtime's Python
    # alone when an interpreter of that version is here to compile it; without one, source only and a note
    import json

    manifest = json.loads((synthesis.outdir / "Stateless.assets.json").read_text())
    staged = [synthesis.outdir / e["source"]["path"] for e in manifest["files"].values()]
    (core,) = [s for s in staged if (s / "python" / "agentmem").is_dir()]
    assert (core / "python" / "agentmem" / "bootstrap.py").is_file()
    runtime_tag = "cpython-" + LAMBDA_PYTHON.replace(".", "")
    compiled = {path.name.split(".")[1] for path in (core / "python" / "agentmem").glob("__pycache__/*.pyc")}
    metadata = json.loads((synthesis.outdir / "Stateless.metadata.json").read_text())
    notes = [entry["data"] for entries in metadata.values() for entry in entries if entry["type"] == "aws:cdk:info"]
    says_source_only = any(f"no Python {LAMBDA_PYTHON} here" in str(note) for note in notes)
    if runtime_python() is not None:
        assert compiled == {runtime_tag} and not says_source_only
    else:
        assert compiled == set() and says_source_only  # never bytecode of another version, which Lambda ignores
    assert not list(core.glob("python/*.egg-info"))


def test_the_dependency_layer_holds_the_built_packages_not_the_recipe(synthesis: Any) -> None:
    # Given the stand-in folder (recipe files, python/ with a package and the build marker)
    built = synthesis.resources("Stateless", "AWS::Lambda::LayerVersion")[_layer_ids(synthesis)["deps"]]
    folder = synthesis.outdir / ("asset." + built["Properties"]["Content"]["S3Key"].removesuffix(".zip"))
    staged = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    # Then the layer's asset is the packages alone: no recipe, and no marker (only synthesis reads it)
    assert staged == ["python/standin-1.0.dist-info/top_level.txt"]


def test_functions_get_powertools_and_agentmem_settings(synthesis: Any) -> None:
    for name, function in _by_folder(synthesis).items():
        env = function["Properties"]["Environment"]["Variables"]
        assert env["POWERTOOLS_SERVICE_NAME"] == "agentmem", name
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == "agentmem", name
        assert env["AGENTMEM_BACKEND"] == "aws", name
        for setting in SETTINGS:
            assert setting in env, (name, setting)
    functions = _by_folder(synthesis)
    assert "AGENTMEM_STATE_MACHINE_ARN" in functions["api"]["Properties"]["Environment"]["Variables"]
    assert "AGENTMEM_STATE_MACHINE_ARN" in functions["compaction"]["Properties"]["Environment"]["Variables"]
    assert "AGENTMEM_STATE_MACHINE_ARN" not in functions["mcp"]["Properties"]["Environment"]["Variables"]


def test_each_function_has_its_own_role(synthesis: Any) -> None:
    roles = [f["Properties"]["Role"]["Fn::GetAtt"][0] for f in _functions(synthesis).values()]
    assert len(set(roles)) == len(FUNCTIONS)
    all_roles = synthesis.resources("Stateless", "AWS::IAM::Role")
    for role in roles:
        document = all_roles[role]["Properties"]
        assert document["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "lambda.amazonaws.com"}
        assert "ManagedPolicyArns" not in document, role


def _statements(synthesis: Any) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for policy in synthesis.resources("Stateless", "AWS::IAM::Policy").values():
        for role in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                found.append((role["Ref"], statement))
    return found


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_no_data_action_is_granted_on_every_resource(synthesis: Any) -> None:
    for role, statement in _statements(synthesis):
        actions = set(_listed(statement["Action"]))
        data = {a for a in actions if a.startswith(DATA_ACTION_PREFIXES)} - NON_RESOURCE_ACTIONS
        if data:
            assert "*" not in _listed(statement["Resource"]), (role, sorted(data))
        assert not any(a.endswith(":*") or a == "*" for a in actions), (role, actions)


def _actions_of(synthesis: Any, role_prefix: str) -> set[str]:
    actions: set[str] = set()
    for role, statement in _statements(synthesis):
        if role.startswith(role_prefix):
            actions |= set(_listed(statement["Action"]))
    return actions


@pytest.mark.parametrize(("role", "must", "must_not"), [
    ("ApiAuthorizerRole", {"dynamodb:GetItem"}, {"dynamodb:PutItem", "dynamodb:Query", "s3:GetObject"}),
    ("ApiRole", {"dynamodb:PutItem", "s3:PutObject", "states:StartExecution", "aoss:APIAccessAll"},
     {"dynamodb:Scan", "dynamodb:DeleteTable"}),
    # the agent tools: entries and usage in the table, and recall (the index read, the query embedded)
    ("ApiMcpRole", {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem",
                    "aoss:APIAccessAll", "bedrock:InvokeModel"},
     {"dynamodb:Scan", "s3:GetObject", "s3:PutObject", "states:StartExecution"}),
    ("IndexerRole", {"dynamodb:GetRecords", "aoss:APIAccessAll", "sqs:SendMessage", "dynamodb:UpdateItem"},
     {"dynamodb:PutItem", "dynamodb:DeleteItem", "s3:GetObject", "states:StartExecution"}),
    # a pass seals the journal into segments (and removes its own when it loses to a purge)
    ("SummariesSummariseRole", {"dynamodb:PutItem", "s3:PutObject", "s3:DeleteObject"},
     {"aoss:APIAccessAll", "s3:PutBucketPolicy"}),
    # an agent's purge (30 days in the trash) lists and deletes its journal segments and workspace files
    ("CompactionRole", {"dynamodb:Query", "dynamodb:DeleteItem", "states:StartExecution", "s3:ListBucket",
                        "s3:DeleteObject"},
     {"s3:GetObject", "s3:PutObject", "aoss:APIAccessAll"}),
])
def test_each_role_gets_what_its_function_needs_and_no_more(
    synthesis: Any, role: str, must: set[str], must_not: set[str]
) -> None:
    actions = _actions_of(synthesis, role)
    assert must <= actions
    assert not (must_not & actions)
