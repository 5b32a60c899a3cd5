"""The only code that talks to AWS: it counts what Cost Explorer can bill ($0.01 a request)
and follows NextPageToken to the end, since boto3 has no paginator for GetCostAndUsage.

`follow_pages` is the one way a paged AWS answer is followed (Cost Explorer here, CloudWatch
Logs' FilterLogEvents in flowsource): a token answered a second time means the service is
going round, and what was read so far is only part of the answer, so it is exit 75, never a
silent end (a partial sum read as the whole window).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from topogate.audit.errors import AuditError, TemporaryError, classify, register_secrets
from topogate.audit.model import RequestRecord
from topogate.audit.page import MalformedAnswer, next_token

# A bound on pages per query: a runaway token loop must not spend unbounded $0.01 requests.
MAX_PAGES = 200

ClientFactory = Callable[[], Any]
Page = TypeVar("Page")


def _none() -> int:
    return 0


def follow_pages(fetch: Callable[[str | None], Page], token_of: Callable[[Page], str | None], what: str,
                 token_name: str, *, max_pages: int | None = MAX_PAGES,
                 requests: Callable[[], int] = _none) -> Iterator[Page]:
    """Every page of one paged call: `fetch(token)` (None first), `token_of(page)` the next
    token or None at the end. A token seen before, or more than `max_pages` pages, is a
    TemporaryError (exit 75) naming `what`; `requests` gives the count it reports."""
    token: str | None = None
    seen: set[str] = set()
    pages = 0
    while max_pages is None or pages < max_pages:
        pages += 1
        page = fetch(token)
        yield page
        token = token_of(page)
        if token is None:
            return
        if token in seen:
            raise TemporaryError(f"{what} returned the same {token_name} twice", requests=requests())
        seen.add(token)
    raise TemporaryError(f"{what} did not finish after {max_pages} pages", requests=requests())


def ce_region_for(configured: str | None) -> str:
    """The Region to create the Cost Explorer client in: CE has one endpoint per partition.

    aws: us-east-1 (ce.us-east-1.amazonaws.com); aws-cn: cn-northwest-1; GovCloud: the
    endpoint rules resolve the partition's global region from any of its regions.
    """
    if configured and configured.startswith("cn-"):
        return "cn-northwest-1"
    if configured and configured.startswith("us-gov-"):
        return configured
    return "us-east-1"


def scrubbed_session() -> Any:
    """A boto3 session whose credentials the scrubber has learnt: whatever shape they have, their
    values are never printed, since it learns them before any request can echo them back."""
    # lazy: boto3 takes about a second to import; only a run that calls AWS needs it
    import boto3

    session = boto3.session.Session()
    creds = session.get_credentials()
    if creds is not None:
        frozen = creds.get_frozen_credentials()
        register_secrets(frozen.access_key, frozen.secret_key, frozen.token)
    return session


def default_client_factory(max_attempts: int = 4) -> ClientFactory:
    """A factory for a real Cost Explorer client with bounded `standard` retries.

    Uses the standard credential chain (env, profiles, OIDC web identity, container/instance
    role) and the standard endpoint overrides AWS_ENDPOINT_URL_COST_EXPLORER / AWS_ENDPOINT_URL,
    all of which boto3 reads itself.
    """

    def make() -> Any:
        # lazy: botocore comes with boto3, loaded only by a run that calls AWS
        from botocore.config import Config

        session = scrubbed_session()
        return session.client(
            "ce",
            region_name=ce_region_for(session.region_name),
            # In botocore's Config, retries["max_attempts"] counts RETRIES (attempts - 1);
            # "total_max_attempts" counts attempts, which is what --max-attempts promises
            # (measured: max_attempts=3 sent 4 requests to a throttling server).
            config=Config(retries={"mode": "standard", "total_max_attempts": max_attempts},
                          connect_timeout=10, read_timeout=60),
        )

    return make


@dataclass
class CostExplorerSession:
    """The only place that calls AWS: counts calls and HTTP attempts, pages to the end.

    `requests` counts the API calls Cost Explorer answered (an HTTP response, error responses
    included, however many retries it took): those are what it can bill. A call that never
    got a response (connection refused, no credentials, bad endpoint) is not counted; its
    HTTP attempts still are.
    """

    client: Any
    requests: int = 0
    attempts: int = 0
    log: list[RequestRecord] = field(default_factory=list)
    _answered: bool = False

    def __post_init__(self) -> None:
        # Each HTTP attempt (retries included) passes 'before-send'; counting it here shows
        # how many times throttling made botocore retry. Stubbed clients never send.
        # 'response-received' fires per attempt that got an HTTP response; 'after-call' fires
        # once per call that ended with a response (real or stubbed), before an error is raised.
        events = getattr(getattr(self.client, "meta", None), "events", None)
        if events is not None:
            events.register("before-send.cost-explorer", self._count_attempt)
            events.register("response-received.cost-explorer", self._on_response)
            events.register("after-call.cost-explorer", self._on_answer)
            # before-parse fires once an HTTP answer is in, before botocore parses it: a body
            # botocore cannot parse (HTML, truncated JSON) was still answered and billed.
            events.register("before-parse.cost-explorer", self._on_answer)

    def _count_attempt(self, **_: Any) -> None:
        self.attempts += 1

    def _on_response(self, response_dict: Any = None, **_: Any) -> None:
        if response_dict is not None:
            self._answered = True

    def _on_answer(self, **_: Any) -> None:
        self._answered = True

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        self.log.append(RequestRecord(operation, params))
        self._answered = False
        try:
            method = getattr(self.client, _snake(operation))
            resp = method(**params)
        except Exception as exc:  # noqa: BLE001 - classify re-raises what it does not know
            answered = self._answered
            self._settle()
            try:
                err = classify(exc, requests=self.requests, attempts=self.attempts)
            except Exception:  # noqa: BLE001 - not a known AWS failure
                if not answered:
                    raise
                # botocore choked on what came back (wrong types in the body): not a page.
                err = MalformedAnswer(operation, f"botocore could not parse it: "
                                                 f"{type(exc).__name__}", requests=self.requests)
            raise err from None
        finally:
            self._settle()
        if not isinstance(resp, Mapping):
            raise MalformedAnswer(operation, f"the answer is {type(resp).__name__}",
                                  requests=self.requests)
        return dict(resp)

    def _settle(self) -> None:
        if self._answered:
            self.requests += 1
            self._answered = False

    def pages(self, operation: str, build: Callable[[str | None], dict[str, Any]]
              ) -> Iterable[dict[str, Any]]:
        def token_of(resp: dict[str, Any]) -> str | None:
            try:
                return next_token(resp, operation)
            except AuditError as err:
                err.requests = self.requests
                raise

        return follow_pages(lambda token: self.call(operation, build(token)), token_of, operation,
                            "NextPageToken", requests=lambda: self.requests)


def _snake(operation: str) -> str:
    return "".join("_" + ch.lower() if ch.isupper() else ch for ch in operation).lstrip("_")
