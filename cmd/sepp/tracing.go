package main

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sepp-io/sepp/config"
)

// startTracing builds the node's TracerProvider from [tracing]: an OTLP/gRPC
// exporter to otlp_endpoint behind a batching span processor, sampling
// parent-based (a job whose producer sampled is followed; a job whose
// producer did not is not) and otherwise at sample_ratio. With no endpoint
// it builds nothing and returns a nil provider: the rpc layer then records
// no span and allocates nothing for tracing. stop flushes the spans still
// queued and closes the exporter, bounded by its context.
func startTracing(cfg config.Tracing, nodeID string, log hclog.Logger) (tp trace.TracerProvider, stop func(context.Context), err error) {
	if cfg.OTLPEndpoint == "" {
		return nil, func(context.Context) {}, nil
	}
	// The exporter connects lazily and retries: a collector that is down
	// costs spans, never the node's start.
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpointURL(cfg.OTLPEndpoint))
	if err != nil {
		return nil, nil, err
	}
	res := resource.NewSchemaless(
		semconv.ServiceName(cfg.ServiceName),
		semconv.ServiceVersion(version),
		semconv.ServiceInstanceID(nodeID),
	)
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	log.Info("tracing on: exporting spans over OTLP/gRPC", "endpoint", cfg.OTLPEndpoint, "service_name", cfg.ServiceName, "sample_ratio", cfg.SampleRatio)
	return sdk, func(ctx context.Context) {
		if err := sdk.Shutdown(ctx); err != nil {
			log.Warn("tracing: flushing spans at shutdown", "error", err)
		}
	}, nil
}
