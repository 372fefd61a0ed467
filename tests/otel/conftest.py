"""One OpenTelemetry SDK for the OpenTelemetry tests: a tracer provider exporting to memory and
a meter provider read in memory. OpenTelemetry's providers are process-wide and set once, so
these tests run last in a session: no other test ever sees a configured provider."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support.fake_llm import FakeLLM, running

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move this folder's tests to the end of the session (see the module docstring)."""
    mine = [item for item in items if Path(str(item.path)).is_relative_to(HERE)]
    if mine and len(mine) != len(items):
        others = [item for item in items if not Path(str(item.path)).is_relative_to(HERE)]
        items[:] = others + mine


@dataclass
class Recorded:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader


@pytest.fixture(scope="session")
def sdk() -> Recorded:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(tracer_provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return Recorded(spans, reader)


@pytest.fixture
def otel(sdk: Recorded) -> Recorded:
    sdk.spans.clear()
    return sdk


@pytest.fixture(scope="module")
def llm_server() -> Iterator[FakeLLM]:
    with running() as server:
        yield server


@pytest.fixture
def llm(llm_server: FakeLLM) -> FakeLLM:
    llm_server.reset()
    return llm_server
