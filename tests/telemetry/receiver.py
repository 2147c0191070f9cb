"""An OTLP/HTTP receiver on loopback for the telemetry tests: every export decoded with ``opentelemetry-proto``.

:class:`Receiver` serves ``POST /v1/traces`` and ``POST /v1/metrics`` (protobuf, gzip or not) under uvicorn
in a daemon thread and keeps what it decoded: :class:`Received` spans and the metric names and points.
:func:`black_hole` is a listening socket that never accepts, so an exporter's connection waits until its
own timeout; :func:`closed_port` is a port nobody listens on (connection refused).
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.e2e.support import ThreadedMock

__all__ = ["Received", "Receiver", "black_hole", "closed_port", "decode_value", "https_receiver", "pki"]


def decode_value(value: common_pb2.AnyValue) -> Any:
    """An ``AnyValue`` as a Python value."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [decode_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: decode_value(item.value) for item in value.kvlist_value.values}
    return getattr(value, kind)


@dataclass(frozen=True)
class Received:
    """One decoded span."""

    name: str
    trace: str
    span: str
    parent: str
    kind: int
    attributes: dict[str, Any]
    status: int
    flags: int
    start: int
    end: int
    resource: dict[str, Any] = field(default_factory=dict)

    @property
    def trace_id(self) -> str:
        """The gateway's spelling of the trace id."""
        return f"trace_{self.trace}"

    @property
    def error(self) -> Any:
        return self.attributes.get("error.type")


class Receiver:
    """The OTLP/HTTP receiver (see the module docstring)."""

    def __init__(self) -> None:
        self.spans: list[Received] = []
        self.metrics: list[tuple[str, dict[str, Any], Any]] = []
        self.exports = 0
        self.metric_exports = 0
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()

        async def traces(request: Request) -> Response:
            body = await request.body()
            if request.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            message = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            found = [
                Received(
                    name=span.name,
                    trace=span.trace_id.hex(),
                    span=span.span_id.hex(),
                    parent=span.parent_span_id.hex(),
                    kind=span.kind,
                    attributes={a.key: decode_value(a.value) for a in span.attributes},
                    status=span.status.code,
                    flags=span.flags,
                    start=span.start_time_unix_nano,
                    end=span.end_time_unix_nano,
                    resource={a.key: decode_value(a.value) for a in resource_spans.resource.attributes},
                )
                for resource_spans in message.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]
            with self._lock:
                self.spans.extend(found)
                self.exports += 1
                self.headers.append(dict(request.headers))
            return Response(
                trace_service_pb2.ExportTraceServiceResponse().SerializeToString(), media_type="application/x-protobuf"
            )

        async def metrics(request: Request) -> Response:
            body = await request.body()
            if request.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            message = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
            found = []
            for resource_metrics in message.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        data = metric.WhichOneof("data")
                        for point in getattr(metric, data).data_points:
                            attributes = {a.key: decode_value(a.value) for a in point.attributes}
                            value = point.count if data == "histogram" else (point.as_int or point.as_double)
                            found.append((metric.name, attributes, value))
            with self._lock:
                self.metrics.extend(found)
                self.metric_exports += 1
            return Response(
                metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString(),
                media_type="application/x-protobuf",
            )

        app = Starlette(
            routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/v1/metrics", metrics, methods=["POST"])]
        )
        self._mock = ThreadedMock(app, "otlp")

    @property
    def url(self) -> str:
        return self._mock.url

    def start(self) -> Receiver:
        self._mock.start()
        return self

    def stop(self) -> None:
        self._mock.stop()

    def trace(self, trace: str) -> list[Received]:
        """Every span received of one trace (``trace_<32 hex>`` or the hex)."""
        wanted = trace.removeprefix("trace_")
        with self._lock:
            return [span for span in self.spans if span.trace == wanted]

    def wait(self, ready: Callable[[], bool], timeout: float = 15.0) -> None:
        """Wait until ``ready()`` (the gateway exports in the background)."""
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise AssertionError(f"the receiver did not get what was expected in {timeout} s")
            time.sleep(0.05)

    def wait_trace(self, trace: str, count: int, timeout: float = 15.0) -> list[Received]:
        """The trace's spans once at least ``count`` have arrived."""
        self.wait(lambda: len(self.trace(trace)) >= count, timeout)
        time.sleep(0.15)  # a straggler of the same batch
        return self.trace(trace)


@contextmanager
def black_hole() -> Iterator[str]:
    """``http://127.0.0.1:PORT``: a listening socket that never accepts (a connection waits, unanswered)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def closed_port() -> str:
    """``http://127.0.0.1:PORT`` where nothing listens (bound, then closed)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


def pki(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and one key and certificate it signed for ``127.0.0.1`` (server and client alike): the CA file,
    the key file and the certificate file, written into ``folder``."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, key: Any, issuer: str, signer: Any, ca: bool) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = build("anvil test CA", ca_key, "anvil test CA", ca_key, True)
    cert = build("127.0.0.1", key, "anvil test CA", ca_key, False)
    paths = folder / "ca.pem", folder / "key.pem", folder / "cert.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    paths[2].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return paths


@contextmanager
def https_receiver(ca: Path, key: Path, cert: Path) -> Iterator[tuple[str, list[str]]]:
    """An HTTPS endpoint on loopback that wants a client certificate signed by ``ca``: its URL, and the
    paths it was posted to."""
    import ssl
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    posted: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            posted.append(self.path)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(ca))
    context.load_cert_chain(str(cert), str(key))
    context.verify_mode = ssl.CERT_REQUIRED
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", posted
    finally:
        server.shutdown()
        server.server_close()
