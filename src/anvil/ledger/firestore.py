"""``firestore:``: the shared durable ledger on Cloud Firestore (official ``google-cloud-firestore`` async client).

URI (original-ledger §1.10): ``firestore://PROJECT/DATABASE/NAMESPACE``. The NAMESPACE (the deployment
namespace) selects the collection group ``anvil_idempotency_<16 hex>``; the document id is the sha256
of the ledger key. Credentials are the client's Application Default Credentials; tests point the client
at the emulator with ``FIRESTORE_EMULATOR_HOST`` (read by the client library itself).

The protocol of original-ledger §1.6 through the client instead of hand-written REST: ``create`` (create
if absent; ``AlreadyExists`` means a row is there), reads masked to the ledger's own fields, ``update`` and
``delete`` preconditioned on the row's ``update_time`` (the version token), and one bounded transient
retry policy for every call (3 attempts, sleeping 50 ms then 100 ms, on 408/429/5xx-class errors); the
client's own retries are switched off so the bound holds. Timestamps are stored as Firestore timestamps
and compared as instants. The readiness probe lists one document of the collection group with a mask of
``status`` (never ``result_json``) and creates nothing.

Errors never repeat the project, database or any provider text: faults become
``LedgerError("ledger/unavailable")``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Final, TypeVar
from urllib.parse import unquote

import anyio

from anvil.errors import ConfigError, LedgerError
from anvil.ledger.base import ROW_FIELDS, Ledger, LedgerOptions, LedgerRow, Sharing, namespace_table

__all__ = ["FirestoreLedger", "firestore_location"]

_PROJECT: Final = re.compile(r"^[a-z0-9](?:[a-z0-9:.-]{0,61}[a-z0-9])?$")
_DATABASE: Final = re.compile(r"^[a-z](?:[a-z0-9-]{2,61}[a-z0-9])?$")
_NAMESPACE: Final = re.compile(r"^[a-zA-Z0-9_.~-]{1,128}$")
_FORM: Final = "ANVIL_LEDGER must be firestore://PROJECT/DATABASE/SERVICE_NAMESPACE."
_ATTEMPTS: Final = 3
_BACKOFF_S: Final = 0.05
_FIELDS: Final = ROW_FIELDS
_TIMES: Final = frozenset({"started_at", "expires_at", "retain_until"})

T = TypeVar("T")


def firestore_location(uri: str) -> tuple[str, str, str]:
    """``(project, database, namespace)`` of a ``firestore://`` URI (original-ledger §1.10).

    The host is taken raw (never lower-cased); an empty trailing ``?`` and empty path segments are
    tolerated; userinfo, a port, a query, a fragment or another segment count are refused.

    Raises:
        ConfigError: the URI is malformed (``config/invalid``; the message never repeats it).
    """
    prefix = "firestore://"
    if not uri.startswith(prefix):
        raise ConfigError("config/invalid", _FORM)
    rest = uri[len(prefix) :]
    if "#" in rest:
        raise ConfigError("config/invalid", _FORM)
    rest, question, query = rest.partition("?")
    if question and query:
        raise ConfigError("config/invalid", _FORM)
    host, _, path = rest.partition("/")
    if "@" in host or ":" in host:
        raise ConfigError("config/invalid", _FORM)
    segments = [segment for segment in path.split("/") if segment]
    if len(segments) != 2:
        raise ConfigError("config/invalid", _FORM)
    try:
        database, namespace = (unquote(segment, errors="strict") for segment in segments)
    except UnicodeDecodeError:
        raise ConfigError("config/invalid", "ANVIL_LEDGER Firestore database is invalid.") from None
    if not _PROJECT.match(host):
        raise ConfigError("config/invalid", "ANVIL_LEDGER Firestore project is invalid.")
    if database != "(default)" and not _DATABASE.match(database):
        raise ConfigError("config/invalid", "ANVIL_LEDGER Firestore database is invalid.")
    if not _NAMESPACE.match(namespace):
        raise ConfigError("config/invalid", "ANVIL_LEDGER Firestore namespace is invalid.")
    return host, database, namespace


def _passed_on(exc: Exception) -> Exception:
    """A call's failure as the bounded retry sees it: a transient one (a server error, throttling, a
    deadline) as it is, so it is tried again; any other one as ``ledger/unavailable``."""
    from google.api_core import exceptions as gexc

    if isinstance(exc, gexc.ServerError | gexc.TooManyRequests | gexc.DeadlineExceeded):
        return exc
    return _unavailable(exc)


def _unavailable(exc: BaseException | None = None) -> LedgerError:
    error = LedgerError(
        "ledger/unavailable",
        "The Firestore ledger could not be read or written.",
        hint="Check the runtime identity's access to the database and the collection group.",
    )
    if exc is not None:
        error.__cause__ = exc
    return error


def _stamp(seconds: float | None) -> dt.datetime | None:
    return None if seconds is None else dt.datetime.fromtimestamp(seconds, tz=dt.UTC)


def _seconds(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.timestamp()
    raise LedgerError("ledger/corrupt_row", "A ledger row holds a time that is not a timestamp.")


def _text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise LedgerError("ledger/corrupt_row", "A ledger row holds a field of the wrong type.")


class FirestoreLedger(Ledger):
    """A ledger in one Firestore collection group, shared by every instance with access to the database."""

    scheme: ClassVar[str] = "firestore"
    durable: ClassVar[bool] = True
    sharing: ClassVar[Sharing] = "cluster"

    def __init__(self, project: str, database: str, namespace: str, options: LedgerOptions | None = None) -> None:
        """Prepare a ledger (the client opens on first use)."""
        super().__init__(options)
        self._project = project
        self._database = database
        self._namespace = namespace
        self._table = namespace_table(namespace)
        self._timeout = self.options.lock_timeout_seconds
        self._client: Any = None

    @classmethod
    def from_uri(cls, uri: str, options: LedgerOptions) -> FirestoreLedger:
        """Open ``firestore://PROJECT/DATABASE/NAMESPACE``.

        Raises:
            ConfigError: the URI is malformed (``config/invalid``).
        """
        project, database, namespace = firestore_location(uri)
        return cls(project, database, namespace, options)

    @property
    def table(self) -> str:
        """The collection group rows live in."""
        return self._table

    @property
    def namespace(self) -> str:
        """The namespace the URI names (the collection group derives from it, never from the options)."""
        return self._namespace

    def _store_identity(self) -> dict[str, str]:
        """The project and the database: every instance with access to them shares the collection group."""
        return {"project": self._project, "database": self._database}

    # --- the client -------------------------------------------------------------------------------

    def _ref(self, document: str) -> Any:
        if self._client is None:
            from google.cloud.firestore import AsyncClient

            try:
                self._client = AsyncClient(project=self._project, database=self._database)
            except Exception as exc:  # no credentials, a bad environment: never the provider's text
                raise _unavailable(exc) from None
        return self._client.collection(self._table).document(document)

    async def _bounded(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` under the transient-retry policy of original-ledger §1.6.2."""
        from google.api_core import exceptions as gexc

        transient = (
            gexc.ServiceUnavailable,
            gexc.DeadlineExceeded,
            gexc.InternalServerError,
            gexc.TooManyRequests,
            gexc.ResourceExhausted,
            gexc.GatewayTimeout,
            gexc.BadGateway,
            gexc.Aborted,
            gexc.Unknown,
            gexc.RetryError,
            TimeoutError,
        )
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                with anyio.fail_after(self._timeout + 1):
                    return await call()
            except transient as exc:
                if attempt == _ATTEMPTS:
                    raise _unavailable(exc) from None
                await anyio.sleep(_BACKOFF_S * 2 ** (attempt - 1))
        raise _unavailable()  # pragma: no cover - the loop always returns or raises

    def _fields(self, row: LedgerRow) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(row, name)
            out[name] = _stamp(value) if name in _TIMES else value
        return out

    def _row(self, snapshot: Any) -> LedgerRow | None:
        if not snapshot.exists:
            return None
        data = snapshot.to_dict() or {}
        status = data.get("status")
        if status not in ("in_progress", "completed"):
            raise LedgerError("ledger/corrupt_row", "A ledger row has an unknown status.")
        fingerprint = data.get("fingerprint")
        code = data.get("response_status")
        if not isinstance(fingerprint, str) or (
            code is not None and (isinstance(code, bool) or not isinstance(code, int))
        ):
            raise LedgerError("ledger/corrupt_row", "A ledger row holds a field of the wrong type.")
        return LedgerRow(
            status=status,
            fingerprint=fingerprint,
            version=snapshot.update_time.rfc3339(),
            reservation_id=_text(data.get("reservation_id")),
            started_at=_seconds(data.get("started_at")),
            operation_id=_text(data.get("operation_id")),
            trace_id=_text(data.get("trace_id")),
            result_json=_text(data.get("result_json")),
            response_status=code,
            expires_at=_seconds(data.get("expires_at")),
            retain_until=_seconds(data.get("retain_until")),
        )

    def _precondition(self, version: str) -> Any:
        from google.api_core.datetime_helpers import DatetimeWithNanoseconds

        stamp = DatetimeWithNanoseconds.from_rfc3339(version)  # type: ignore[no-untyped-call]
        return self._client.write_option(last_update_time=stamp)

    async def close(self) -> None:
        """Close the client's channel (a later call opens a new one)."""
        client, self._client = self._client, None
        if client is None:
            return
        # The async client has no close(); its gRPC channel must be closed on the loop that opened it.
        transport = getattr(getattr(client, "_firestore_api", None), "_transport", None)
        closing = getattr(transport, "close", None)
        if callable(closing):
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await closing()

    # --- primitives -------------------------------------------------------------------------------

    async def _create_if_absent(self, document: str, row: LedgerRow) -> str | None:
        """``create``: atomic create-if-absent; ``AlreadyExists`` (also after a lost first answer) is None."""
        from google.api_core import exceptions as gexc

        ref = self._ref(document)
        fields = {name: value for name, value in self._fields(row).items() if value is not None}

        async def call() -> str | None:
            try:
                result = await ref.create(fields, retry=None, timeout=self._timeout)
            except gexc.Conflict:
                return None
            except gexc.GoogleAPICallError as exc:
                raise _passed_on(exc) from None
            return str(result.update_time.rfc3339())

        return await self._bounded(call)

    async def _read(self, document: str) -> LedgerRow | None:
        """``get`` masked to the ledger's fields."""
        from google.api_core import exceptions as gexc

        ref = self._ref(document)

        async def call() -> Any:
            try:
                return await ref.get(field_paths=list(_FIELDS), retry=None, timeout=self._timeout)
            except gexc.GoogleAPICallError as exc:
                raise _passed_on(exc) from None

        return self._row(await self._bounded(call))

    async def _update_if_version(
        self, document: str, version: str, row: LedgerRow, *, final: bool = False
    ) -> str | None:
        """``update`` preconditioned on ``update_time``; a failed precondition (or a missing row) is None."""
        from google.api_core import exceptions as gexc

        ref = self._ref(document)
        # Every field is written, a cleared one as null: the update replaces the whole row in one step.
        fields = self._fields(row)
        option = self._precondition(version)

        async def call() -> str | None:
            try:
                result = await ref.update(fields, option=option, retry=None, timeout=self._timeout)
            except (gexc.FailedPrecondition, gexc.NotFound, gexc.Conflict):
                return None
            except gexc.GoogleAPICallError as exc:
                raise _passed_on(exc) from None
            return str(result.update_time.rfc3339())

        return await self._bounded(call)

    async def _delete_if_version(self, document: str, version: str) -> bool:
        """``delete`` preconditioned on ``update_time``; a failed precondition deletes nothing."""
        from google.api_core import exceptions as gexc

        ref = self._ref(document)
        option = self._precondition(version)

        async def call() -> bool:
            try:
                await ref.delete(option=option, retry=None, timeout=self._timeout)
            except (gexc.FailedPrecondition, gexc.NotFound, gexc.Conflict):
                return False
            except gexc.GoogleAPICallError as exc:
                raise _passed_on(exc) from None
            return True

        return await self._bounded(call)

    async def _probe(self) -> str:
        """List one document of the collection group, masked to ``status``."""
        from google.api_core import exceptions as gexc

        try:
            self._ref("probe")
            query = self._client.collection(self._table).select(["status"]).limit(1)
            found = await query.get(retry=None, timeout=self._timeout)
        except LedgerError:
            return "unavailable"
        except (gexc.PermissionDenied, gexc.Unauthenticated, gexc.Forbidden, gexc.Unauthorized):
            return "permission_denied"
        except gexc.NotFound:
            return "database_not_found"
        except (gexc.GoogleAPIError, OSError, TimeoutError):
            return "unavailable"
        return "ok" if isinstance(found, list) else "invalid_response"
