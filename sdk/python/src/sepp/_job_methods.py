"""The methods of the job family's types beyond their fields, which the
generated dataclasses of sepp._job derive from (tools/protoc-gen-sepp-sdk's
jobPython table names them): the write side's conversions and helpers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional

from sepp.v1 import types_pb2 as tpb

if TYPE_CHECKING:
    from sepp._job import TraceContext


class TraceContextMethods:
    """A W3C trace context (https://www.w3.org/TR/trace-context/), carried by
    a job in a field of its own: the server keeps it with the job and returns
    it on every delivery (``Job.trace_context``). ``traceparent`` is at most
    128 bytes in the W3C format, ``tracestate`` at most 512; the server
    refuses an invalid one with InvalidArgument naming the field.

    ``as_headers()`` and ``from_headers()`` convert to and from the carrier
    a tracing library's propagator reads and writes (OpenTelemetry's
    ``propagate.inject(carrier)`` / ``propagate.extract(carrier)``)."""

    # The generated dataclass's fields, which these methods read.
    traceparent: str
    tracestate: str

    def as_headers(self) -> dict[str, str]:
        h = {"traceparent": self.traceparent}
        if self.tracestate:
            h["tracestate"] = self.tracestate
        return h

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> Optional[TraceContext]:
        """The trace context of a propagator's carrier; None without a
        traceparent."""
        from sepp._job import TraceContext  # the dataclass, which imports this module

        tp = headers.get("traceparent", "")
        return TraceContext(tp, headers.get("tracestate", "")) if tp else None

    def to_proto(self) -> tpb.TraceContext:
        return tpb.TraceContext(traceparent=self.traceparent, tracestate=self.tracestate)
