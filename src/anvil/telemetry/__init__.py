"""Telemetry: the gateway's traces, metrics and JSON logs, exported with OpenTelemetry.

Nothing here is imported unless ``anvil serve`` runs with ``ANVIL_OTEL_EXPORTER`` other than ``none``
(or ``ANVIL_LOG_FORMAT=json``, which needs only :mod:`anvil.telemetry.logs`). Modules:

* :mod:`~anvil.telemetry.settings` - what to export where (built by the CLI);
* :mod:`~anvil.telemetry.sampling` - which traces are exported (``OTEL_TRACES_SAMPLER``);
* :mod:`~anvil.telemetry.otlp` - spans as OTLP protobuf (ours: :mod:`~anvil.telemetry.export` says why);
* :mod:`~anvil.telemetry.spans` - span records and the recorder the runtime reports to;
* :mod:`~anvil.telemetry.export` - the bounded queue, its thread and the sinks (ours, or an SDK exporter);
* :mod:`~anvil.telemetry.aggregates` - the metrics derived from the spans;
* :mod:`~anvil.telemetry.google` - Google's telemetry endpoint and its token;
* :mod:`~anvil.telemetry.logs` - JSON log lines with Cloud Logging's trace fields;
* :mod:`~anvil.telemetry.pipeline` - :func:`start_telemetry`, which puts them together.
"""
