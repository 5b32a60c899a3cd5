"""Exit codes of `topogate audit egress`, and the one-line errors behind them.

A nightly scheduler acts on the exit code: retry later (75), page someone about IAM (77), fix
the configuration (78). The codes for 75/77/78 are the BSD sysexits values (EX_TEMPFAIL,
EX_NOPERM, EX_CONFIG), which cron wrappers and systemd already understand.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from topogate.core import redact
from topogate.core.exitcodes import ExitCode

if TYPE_CHECKING:
    from botocore.exceptions import ClientError


EXIT_CODE_DOCS: tuple[tuple[int, str], ...] = (
    (ExitCode.OK, "within budget: every AWS cluster-day at or under budgetUSDPerDay (or no budget set)"),
    (ExitCode.OVER_BUDGET, "over budget: at least one AWS cluster-day over budgetUSDPerDay"),
    (ExitCode.BAD_INVOCATION, "bad invocation: bad options, a date not in the form YYYY-MM-DD, "
                              "a window that is empty or ends after today, an unreadable "
                              "inventory, a window Cost Explorer refuses (BillExpirationException), "
                              "a flow-log line that is not a VPC Flow Logs record (named by object "
                              "and line), a flow-log object that is not whole (gzip cut short or "
                              "followed by other bytes, not UTF-8, over 1 GiB inflated)"),
    (ExitCode.TEMPORARY, "temporary: throttled after retries (LimitExceededException), "
                         "DataUnavailableException, network or 5xx errors, any answer that is "
                         "not a well-formed Cost Explorer page (HTML, truncated JSON, missing or "
                         "mistyped fields, days outside the window, a non-numeric, negative or "
                         "absurd amount), a day of the window without its DAILY result across "
                         "the pages, no flow-log record in the window, the audit's --deadline "
                         "passed, a paged answer (Cost Explorer, CloudWatch Logs) giving the same "
                         "next token twice; run again later"),
    (ExitCode.ACCESS_DENIED, "access denied: the credentials may not call ce:GetCostAndUsage "
                             "(or ce:GetDimensionValues)"),
    (ExitCode.CONFIG, "configuration: no credentials or expired credentials (ExpiredToken: "
                      "refresh them / the OIDC role session), no region, an invalid endpoint URL, "
                      "an AWS cluster without cost.tagKey, or --verify-usage-types did not find "
                      "the usage types"),
)


class AuditError(Exception):
    """A failure the CLI turns into one line on stderr and an exit code."""

    code: ExitCode = ExitCode.TEMPORARY

    def __init__(self, message: str, *, requests: int = 0) -> None:
        super().__init__(scrub(message))
        self.requests = requests

    @property
    def message(self) -> str:
        return str(self.args[0])

    def line(self) -> str:
        """The one line for stderr: what failed, what to do, how many paid requests it cost.

        Requests are counted when Cost Explorer answered them (any HTTP response, errors
        included); a request that never reached it (connection refused, no credentials) is not.
        """
        return f"topogate audit: {self.message} [exit {int(self.code)}; {requests_phrase(self.requests)}]"


def requests_phrase(n: int) -> str:
    """'3 Cost Explorer requests answered': the same words in every output."""
    return f"{n} Cost Explorer request{'s' if n != 1 else ''} answered"


class TemporaryError(AuditError):
    code = ExitCode.TEMPORARY


class AccessDeniedError(AuditError):
    code = ExitCode.ACCESS_DENIED


class ConfigError(AuditError):
    code = ExitCode.CONFIG


class InvocationError(AuditError):
    code = ExitCode.BAD_INVOCATION


class DeadlineExceeded(BaseException):  # noqa: N818 - not an error of the code: a clock
    """The audit's total deadline passed (raised from a timer signal, anywhere, even inside a
    socket read botocore's per-read timeout never ends). A BaseException, so that no
    `except Exception` on the way (botocore's, the session's) can mistake it for an answer."""


def deadline_error(seconds: float, requests: int) -> TemporaryError:
    return TemporaryError(
        f"the audit did not finish within its deadline of {seconds:g} s (--deadline): an answer "
        "from Cost Explorer, S3 or CloudWatch Logs came too slowly, or the analysis took too "
        "long; not judged (an unfinished audit is never read as within budget; a request cut "
        "short may still be billed); run again later or raise --deadline", requests=requests)


# Defence in depth: AWS error messages do not carry secrets, but a message is printed verbatim
# and an access key id, a secret, a session token or a password in a URL must never reach a CI
# log. Order matters: URLs lose their userinfo first, then the shapes of AWS credentials.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s\"'@]*@")
_SECRETISH = re.compile(
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{12,}\b"  # access key / principal ids
    # session tokens: STS tokens start with these base64 prefixes and run to hundreds of chars
    r"|(?:IQoJb3JpZ2lu|FwoGZXIvYXdz|FQoGZXIvYXdz)[A-Za-z0-9/+=]*"
    r"|(?P<key40>(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=]))"  # secret key shape
    # any other long base64 run (a session token without a known prefix); file paths, which
    # have '-', '_' or '.', are left alone so that the cause warning can still name a file
    r"|(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{100,}(?![A-Za-z0-9/+=])"
    r"|(?i:(?:X-Amz-Security-Token|X-Amz-Signature|Signature|Credential)(?:=|:\s*)[^&\s]+)"
    r"|(?i:\b(?:aws_session_token|aws_secret_access_key|aws_security_token)\b[\"']?\s*[=:]\s*"
    r"[\"']?[^\s\"',;&]+)"
)


# The credential values this process was given (access key, secret, session token), whatever
# their shape: the shapes above miss a session token that is not STS-shaped (a vendor's, a
# test's), so the values themselves are redacted wherever they are echoed back.
_KNOWN: set[str] = set()
# Shorter values are not secrets worth the cost of redacting every occurrence of them.
MIN_SECRET_CHARS = 6
_SECRET_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
               "AWS_SECURITY_TOKEN")


def register_secrets(*values: str | None) -> None:
    """Remember credential values so that `scrub` and `redact_known` replace them anywhere."""
    from urllib.parse import quote, quote_plus

    # The project's filter also learns them: it redacts their transformed copies (cut by one
    # character, base64, every punctuation %-encoded), which an endpoint may echo back.
    redact.register(v for v in values if v)
    for value in values:
        if not value or len(value.strip()) < MIN_SECRET_CHARS:
            continue
        folded = " ".join(value.split())
        encoded = quote(value, safe="")
        # as sent in a query string (X-Amz-Security-Token=...), in either hex case
        variants = {value, folded, encoded, quote_plus(value, safe=""),
                    re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)}
        _KNOWN.update(v for v in variants if len(v) >= MIN_SECRET_CHARS)


def register_environment_secrets(environ: dict[str, str] | None = None) -> None:

    env = os.environ if environ is None else environ
    register_secrets(*(env.get(k) for k in _SECRET_ENV))


def redact_known(text: str) -> str:
    """Replace every registered credential value (longest first, so no part survives)."""
    for value in sorted(_KNOWN, key=lambda v: (-len(v), v)):
        if value in text:
            text = text.replace(value, "[redacted]")
    return redact.redact(text)


def scrub(text: str) -> str:
    """Fold the text onto one line; redact known credential values; drop URL userinfo;
    replace credential-shaped strings."""
    one_line = redact_known(" ".join(redact_known(text).split()))
    one_line = _URL_USERINFO.sub(r"\1[redacted]@", one_line)
    return _SECRETISH.sub(_redact_shape, one_line)


def _redact_shape(m: re.Match[str]) -> str:
    # A 40-character run with three or more '/' is a path (an S3 key's folders: AWSLogs/<id>/
    # vpcflowlogs/...), not a secret access key, where '/' is one character in 64. Values this
    # process was given are redacted whatever their shape, before this.
    if m.group("key40") is not None and m.group(0).count("/") >= 3:
        return m.group(0)
    return "[redacted]"


# Cost Explorer error codes -> (exit class, advice). Codes not listed fall through to
# classify()'s defaults: 4xx -> invocation, everything else temporary.
_THROTTLING = {"LimitExceededException", "ThrottlingException", "TooManyRequestsException",
               "RequestLimitExceeded"}
_TEMPORARY = {"DataUnavailableException", "RequestChangedException", "InvalidNextTokenException",
              "ServiceUnavailableException", "InternalServerError", "InternalFailure",
              "ServiceUnavailable", "BillingViewHealthStatusException"}
_DENIED = {"AccessDeniedException", "AccessDenied", "UnauthorizedOperation",
           "UnrecognizedClientException", "InvalidClientTokenId",
           "SignatureDoesNotMatch", "InvalidSignatureException"}
# Expired credentials are not an IAM problem: the same role works again once refreshed.
_EXPIRED = {"ExpiredTokenException", "ExpiredToken"}


def classify(exc: BaseException, *, requests: int, attempts: int = 0) -> AuditError:
    """Turn a botocore exception into the AuditError with the right exit code and one line.

    Imported lazily so the pure parts of the audit never need botocore.
    """
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    if isinstance(exc, AuditError):
        return exc
    config = _configuration_error(exc, requests)
    if config is not None:
        return config
    if isinstance(exc, ClientError):
        return _client_error(exc, requests, attempts)
    if isinstance(exc, BotoConnectionError):
        tries = f" ({attempts} attempt{'s' if attempts != 1 else ''})" if attempts else ""
        return TemporaryError(f"cannot reach Cost Explorer{tries}: {exc}", requests=requests)
    if isinstance(exc, BotoCoreError):
        return TemporaryError(f"AWS client error: {exc}", requests=requests)
    raise exc


def _configuration_error(exc: BaseException, requests: int) -> ConfigError | None:
    """Credentials, endpoint or region the user must fix before any request can succeed."""
    from botocore.exceptions import (
        CredentialRetrievalError,
        EndpointProviderError,
        InvalidConfigError,
        InvalidEndpointConfigurationError,
        InvalidRegionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ProfileNotFound,
        SSOError,
        TokenRetrievalError,
    )

    if isinstance(exc, NoCredentialsError):
        return ConfigError(
            "no AWS credentials found (environment, shared config/profile, web identity/OIDC, "
            "container or instance role); configure one of them", requests=requests)
    if isinstance(exc, (PartialCredentialsError, CredentialRetrievalError, ProfileNotFound,
                        TokenRetrievalError, SSOError)):
        return ConfigError(f"AWS credentials are misconfigured: {exc}", requests=requests)
    if isinstance(exc, (InvalidEndpointConfigurationError, EndpointProviderError,
                        InvalidRegionError, InvalidConfigError)) or (
            isinstance(exc, ValueError) and str(exc).startswith("Invalid endpoint")):
        # botocore raises a bare ValueError for an endpoint URL it cannot parse
        # (AWS_ENDPOINT_URL_COST_EXPLORER="not a url"): a setting to fix, not a bug to report.
        return ConfigError(f"invalid AWS endpoint or region configuration ({exc}); check "
                           "AWS_ENDPOINT_URL_COST_EXPLORER, AWS_ENDPOINT_URL and endpoint_url / "
                           "region in the AWS profile", requests=requests)
    if isinstance(exc, NoRegionError):
        return ConfigError("no AWS region configured for the Cost Explorer client; set "
                           "AWS_REGION or AWS_DEFAULT_REGION (Cost Explorer answers in us-east-1)",
                           requests=requests)
    return None


def _client_error(exc: ClientError, requests: int, attempts: int) -> AuditError:
    """An error answer from AWS (botocore ClientError), by its error code and HTTP status."""
    err = exc.response.get("Error", {})
    code = str(err.get("Code", "Unknown"))
    msg = str(err.get("Message", "")).strip()
    op = exc.operation_name
    detail = f"{op}: {code}" + (f": {msg}" if msg else "")
    if code in _THROTTLING:
        tries = f" after {attempts} attempts" if attempts else " after retries"
        return TemporaryError(f"Cost Explorer throttled the audit{tries} ({detail}); "
                              "run again later", requests=requests)
    if code == "DataUnavailableException":
        return TemporaryError(f"Cost Explorer has no data for the window yet ({detail}); "
                              "run again later or move --end back", requests=requests)
    if code in _TEMPORARY:
        return TemporaryError(f"Cost Explorer failed temporarily ({detail}); run again later",
                              requests=requests)
    if code in _EXPIRED:
        return ConfigError(
            f"the AWS credentials have expired ({detail}); refresh them: a new OIDC / web "
            "identity role session (re-run configure-aws-credentials, or let the EKS pod "
            "identity webhook rotate the token), a new `aws sso login`, or new session "
            "credentials in the environment", requests=requests)
    if code in _DENIED:
        return AccessDeniedError(
            f"access denied by AWS ({detail}); the role needs ce:GetCostAndUsage"
            " (and ce:GetDimensionValues for --verify-usage-types)", requests=requests)
    if code == "BillExpirationException":
        return InvocationError(f"the window is older than Cost Explorer keeps ({detail}); "
                               "choose a later --start", requests=requests)
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    if code.isdigit():
        # botocore names the error after the HTTP status when the body carries no AWS
        # error (an HTML page from a proxy or a captive portal): not Cost Explorer's answer.
        return TemporaryError(
            f"{op}: HTTP {status or code} without a Cost Explorer error in the body: the "
            "answer did not come from Cost Explorer (a proxy?); check "
            "AWS_ENDPOINT_URL_COST_EXPLORER and proxies, else run again later",
            requests=requests)
    if 400 <= status < 500:
        return InvocationError(f"Cost Explorer rejected the request ({detail})", requests=requests)
    return TemporaryError(f"Cost Explorer failed ({detail}); run again later", requests=requests)

__all__ = ["AuditError", "ConfigError", "DeadlineExceeded", "EXIT_CODE_DOCS", "InvocationError",
           "deadline_error", "MIN_SECRET_CHARS", "TemporaryError", "classify", "redact_known",
           "register_environment_secrets", "register_secrets", "requests_phrase", "scrub"]
