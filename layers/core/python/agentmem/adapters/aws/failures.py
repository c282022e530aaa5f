"""What a person can do about an AWS failure, in one line: no credentials, an endpoint that does not answer,
credentials AWS refuses, a table or bucket that is not there. And whether a failure is AWS being busy or
briefly down (``is_transient``), which the API answers 503 with ``Retry-After`` rather than 500.

The CLI (``agentmem serve --backend aws``, ``accounts create --backend aws``, ``reindex``) prints this line
instead of a traceback. Anything else is not described (None) and is left to raise as it is. botocore is
imported only when there is an error to read, so the embedded install (no boto3) can call this too.
"""

from __future__ import annotations

from collections.abc import Iterator

# error codes that mean "these credentials are not accepted", whichever service says it
_REFUSED = frozenset({
    "UnrecognizedClientException", "InvalidClientTokenId", "InvalidAccessKeyId", "SignatureDoesNotMatch",
    "InvalidSignatureException", "ExpiredToken", "ExpiredTokenException", "AccessDenied", "AccessDeniedException",
})
# error codes of throttling and of a service failing for a moment, whichever service says it (botocore's
# standard retry mode retries these; one that outlasts the retries is still AWS's, not the request's, fault)
_TRANSIENT = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "Throttling", "ThrottledException",
    "RequestLimitExceeded", "RequestThrottled", "RequestThrottledException", "TooManyRequestsException",
    "SlowDown", "TransactionInProgressException", "LimitExceededException", "BandwidthLimitExceeded",
    "InternalServerError", "InternalServerException", "InternalError", "InternalFailure", "ServiceUnavailable",
    "ServiceUnavailableException", "ServiceException", "ModelNotReadyException",
})
_CREDENTIALS_HINT = ("set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (any values for emulators: "
                     "`make run-aws` starts them and sets these)")


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The error and what it wraps (``raise … from``, the context, pynamodb's ``cause``), outermost first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        wrapped = getattr(current, "cause", None)
        current = wrapped if isinstance(wrapped, BaseException) else (current.__cause__ or current.__context__)


def describe_failure(error: BaseException) -> str | None:
    """One line saying what went wrong with AWS and what to do, or None when ``error`` is not such a failure."""
    try:
        from botocore import exceptions as botocore_errors
    except ImportError:  # no AWS backend installed: nothing of this kind can have happened
        return None
    for cause in _causes(error):
        if isinstance(cause, botocore_errors.NoCredentialsError | botocore_errors.PartialCredentialsError):
            return f"no AWS credentials ({cause}): {_CREDENTIALS_HINT}"
        if isinstance(cause, botocore_errors.CredentialRetrievalError | botocore_errors.TokenRetrievalError
                      | botocore_errors.SSOError | botocore_errors.ProfileNotFound):
            return f"the AWS credentials could not be read: {cause}"
        if isinstance(cause, botocore_errors.NoRegionError):
            return "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION)"
        if isinstance(cause, botocore_errors.EndpointConnectionError | botocore_errors.ConnectTimeoutError
                      | botocore_errors.ReadTimeoutError | botocore_errors.ConnectionClosedError):
            endpoint = getattr(cause, "kwargs", {}).get("endpoint_url", "the AWS endpoint")
            return (f"cannot reach {endpoint} ({type(cause).__name__}): is the emulator running, and is "
                    "AWS_ENDPOINT_URL_* its address?")
        if isinstance(cause, botocore_errors.ClientError):
            details = cause.response.get("Error", {})
            code, message = str(details.get("Code", "")), str(details.get("Message", "")).rstrip(".")
            operation = getattr(cause, "operation_name", "a call")
            if code in _REFUSED:
                return f"AWS refused {operation}: {code}: {message}. Check the credentials and their permissions"
            if code in ("ResourceNotFoundException", "NoSuchBucket"):
                return (f"{operation} found no such resource ({code}: {message}): deploy the stack, or pass "
                        "--create-resources against emulators")
    return None


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` (or what it wraps) is AWS throttling or failing for a moment, past the client's retries:
    a throttling or 5xx answer, an endpoint that did not answer in time, or a transaction DynamoDB cancelled for
    throughput (an exception of ours that says ``transient``). Nothing was written; the request may be retried."""
    try:
        from botocore import exceptions as botocore_errors
    except ImportError:
        return False
    for cause in _causes(error):
        if getattr(cause, "transient", False) is True:
            return True
        if isinstance(cause, botocore_errors.EndpointConnectionError | botocore_errors.ConnectTimeoutError
                      | botocore_errors.ReadTimeoutError | botocore_errors.ConnectionClosedError):
            return True
        if isinstance(cause, botocore_errors.ClientError):
            status = int(cause.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            return str(cause.response.get("Error", {}).get("Code", "")) in _TRANSIENT or status >= 500 or status == 429
    return False
