"""What a person sees when the AWS backend cannot start: one line saying what is wrong and what to do, never a
traceback (SPEC §12: bad input of any kind gets a clear answer)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from agentmem.adapters.aws.failures import describe_failure, is_transient
from agentmem.cli import cli
from agentmem.local.emulators import free_port
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError
from click.testing import CliRunner
from pynamodb.exceptions import PutError, TableError


@pytest.fixture
def no_aws(tmp_path: Path) -> dict[str, str | None]:
    """CliRunner's environment changes for a shell with no AWS settings and no way to find credentials (no
    files, no instance metadata): every AGENTMEM_* and AWS_* variable unset (None), then these few."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith(("AGENTMEM_", "AWS_"))}
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                "AWS_EC2_METADATA_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"})
    return env


def _refused(code: str, operation: str = "DescribeTable") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"{code} happened."}}, operation)


def test_no_credentials_says_how_to_give_them() -> None:
    line = describe_failure(NoCredentialsError())
    assert line is not None and line.startswith("no AWS credentials")
    assert "AWS_ACCESS_KEY_ID" in line and "make run-aws" in line


def test_an_endpoint_that_does_not_answer_is_named() -> None:
    line = describe_failure(EndpointConnectionError(endpoint_url="http://127.0.0.1:8000/"))
    assert line is not None and "cannot reach http://127.0.0.1:8000/" in line and "AWS_ENDPOINT_URL_" in line


@pytest.mark.parametrize("code", ["UnrecognizedClientException", "InvalidClientTokenId", "AccessDeniedException"])
def test_credentials_aws_refuses_are_said_so(code: str) -> None:
    line = describe_failure(_refused(code))
    assert line is not None and f"AWS refused DescribeTable: {code}" in line


def test_a_missing_table_says_how_to_make_it() -> None:
    line = describe_failure(_refused("ResourceNotFoundException"))
    assert line is not None and "--create-resources" in line


def test_a_failure_wrapped_by_pynamodb_or_raised_from_another_is_read_through() -> None:
    wrapped = TableError("Failed to describe table", cause=NoCredentialsError())
    assert (describe_failure(wrapped) or "").startswith("no AWS credentials")
    try:
        try:
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:5000/")
        except EndpointConnectionError as error:
            raise RuntimeError("the journal bucket") from error
    except RuntimeError as outer:
        assert "cannot reach http://127.0.0.1:5000/" in (describe_failure(outer) or "")


@pytest.mark.parametrize("error", [ValueError("a bug"), _refused("ValidationException"), KeyError("x")])
def test_other_errors_are_not_described_and_keep_their_traceback(error: BaseException) -> None:
    assert describe_failure(error) is None


def _answered(code: str, status: int) -> ClientError:
    answer: Any = {"Error": {"Code": code, "Message": "busy"}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(answer, "PutItem")


class _Throttled(Exception):
    transient = True


@pytest.mark.parametrize("error", [
    _answered("ProvisionedThroughputExceededException", 400), _answered("ThrottlingException", 400),
    _answered("InternalServerError", 500), _answered("SlowDown", 503), _answered("SomethingNew", 502),
    _answered("TooManyRequestsException", 429), EndpointConnectionError(endpoint_url="http://127.0.0.1:1/"),
    PutError("Failed to put item", cause=_answered("ThrottlingException", 400)), _Throttled("cancelled"),
], ids=lambda e: type(e).__name__ + ":" + str(getattr(e, "response", {}).get("Error", {}).get("Code", "")))
def test_throttling_and_5xx_are_transient_whatever_wraps_them(error: BaseException) -> None:
    assert is_transient(error)


@pytest.mark.parametrize("error", [ValueError("a bug"), _answered("ValidationException", 400),
                                   _answered("ConditionalCheckFailedException", 400), _refused("AccessDenied")])
def test_a_bug_or_a_refusal_is_not_transient(error: BaseException) -> None:
    assert not is_transient(error)


def test_serve_on_aws_without_credentials_is_one_line(
    no_aws: dict[str, str | None], tmp_path: Path,
) -> None:
    # When `agentmem serve --backend aws` starts in a shell without credentials
    result = CliRunner().invoke(cli, ["serve", "--backend", "aws", "--port", "0", "--data-dir", str(tmp_path)],
                                env=no_aws)
    # Then it says so in one line and exits 1
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: no AWS credentials")
    assert "Traceback" not in result.output
    # after saying where its summary passes would run
    assert lines[0].startswith("Summary passes run in this process")


def test_serve_on_aws_with_an_emulator_that_is_not_there_is_one_line(
    no_aws: dict[str, str | None], tmp_path: Path,
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    env = {**no_aws, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_ENDPOINT_URL_DYNAMODB": closed, "AWS_ENDPOINT_URL_S3": closed}
    result = CliRunner().invoke(
        cli, ["serve", "--backend", "aws", "--create-resources", "--port", "0", "--data-dir", str(tmp_path)], env=env
    )
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1].startswith(f"error: cannot reach {closed}")
    assert "Traceback" not in result.output


def test_an_unknown_setting_is_one_line_before_anything_starts(
    no_aws: dict[str, str | None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def started(*_: object, **__: object) -> None:  # were the check missing, fail rather than serve forever
        raise AssertionError("the server started despite an unknown setting")

    monkeypatch.setattr("agentmem.local.server.serve", started)
    env = {**no_aws, "AGENTMEM_SUMARY_MODEL_ID": "amazon.nova-micro-v1:0"}  # SUMMARY misspelt
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--data-dir", str(tmp_path)], env=env)
    assert result.exit_code == 2
    assert result.output.strip() == ("error: unknown setting AGENTMEM_SUMARY_MODEL_ID (did you mean "
                                     "AGENTMEM_SUMMARY_MODEL_ID?): docs/guide.md lists the AGENTMEM_* variables")
    assert not (tmp_path / "agentmem.db").exists()  # nothing was created


def test_serve_emulated_without_java_or_the_jar_says_what_to_install(
    no_aws: dict[str, str | None], tmp_path: Path,
) -> None:
    result = CliRunner().invoke(cli, ["serve-emulated", "--port", "0"], env={**no_aws, "PATH": str(tmp_path)})
    assert result.exit_code == 1
    assert "java not found on PATH" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["serve-emulated", "--port", "0", "--dynamodb-local", str(tmp_path)], env=no_aws)
    assert result.exit_code == 1
    assert f"no DynamoDBLocal.jar in {tmp_path}" in result.output
