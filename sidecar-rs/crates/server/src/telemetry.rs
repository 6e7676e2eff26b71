//! JSON logs on stderr, and OTLP/HTTP span export when an endpoint is configured.

use std::time::Duration;

use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use tracing_subscriber::EnvFilter;

use crate::otlp_http::PlainHttpClient;

/// How long one export may take before it is abandoned.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Telemetry settings, read from the standard OpenTelemetry variables.
#[derive(Debug, Clone, clap::Args)]
pub struct TelemetryOptions {
    /// Base OTLP/HTTP endpoint; spans go to `<endpoint>/v1/traces`. Spans are exported only
    /// when this or `--otlp-traces-endpoint` is set. Only `http://` endpoints are supported.
    #[clap(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// Full OTLP/HTTP traces URL; wins over `--otlp-endpoint`.
    #[clap(long, env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")]
    pub otlp_traces_endpoint: Option<String>,

    /// `http/protobuf` (default) or `http/json`.
    #[clap(long, env = "OTEL_EXPORTER_OTLP_PROTOCOL")]
    pub otlp_protocol: Option<String>,

    /// Traces-only override of `--otlp-protocol`.
    #[clap(long, env = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")]
    pub otlp_traces_protocol: Option<String>,

    /// `service.name` of exported spans.
    #[clap(long, env = "OTEL_SERVICE_NAME", default_value = "shoal-sidecar")]
    pub service_name: String,

    /// Longest a finished span waits before it is exported, in milliseconds. Short, so that
    /// traces show up while a latency problem is being looked at.
    #[clap(long, env = "SHOAL_SIDECAR_OTLP_DELAY_MS", default_value_t = 200)]
    pub otlp_delay_ms: u64,

    /// Log filter in `tracing` `EnvFilter` syntax, e.g. `info` or `shoal_sidecar=debug`.
    #[clap(long, env = "RUST_LOG", default_value = "info")]
    pub log: String,
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `--log` is not a valid filter.
    #[error("invalid log filter: {0}")]
    Filter(#[from] tracing_subscriber::filter::ParseError),
    /// A global subscriber is already installed.
    #[error("logging is already initialised: {0}")]
    Logging(String),
    /// The endpoint or protocol cannot be used.
    #[error("OTLP exporter: {0}")]
    Exporter(String),
}

/// Keeps the span pipeline alive; [`Telemetry::shutdown`] flushes it.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl TelemetryOptions {
    /// The traces URL, when exporting is configured at all.
    pub fn traces_endpoint(&self) -> Option<String> {
        if let Some(url) = non_empty(&self.otlp_traces_endpoint) {
            return Some(url.to_owned());
        }
        non_empty(&self.otlp_endpoint)
            .map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
    }

    /// The OTLP encoding to use.
    pub fn protocol(&self) -> Result<Protocol, TelemetryError> {
        let name = non_empty(&self.otlp_traces_protocol)
            .or_else(|| non_empty(&self.otlp_protocol))
            .unwrap_or("http/protobuf");
        match name {
            "http/protobuf" => Ok(Protocol::HttpBinary),
            "http/json" => Ok(Protocol::HttpJson),
            other => Err(TelemetryError::Exporter(format!(
                "protocol `{other}` is not supported; use http/protobuf or http/json"
            ))),
        }
    }
}

impl Telemetry {
    /// Installs the JSON log subscriber and, when an endpoint is configured, the global tracer
    /// provider. Call before starting the async runtime: nothing here needs one.
    pub fn init(options: &TelemetryOptions) -> Result<Self, TelemetryError> {
        tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_env_filter(EnvFilter::try_new(&options.log)?)
            .try_init()
            .map_err(|e| TelemetryError::Logging(e.to_string()))?;

        let Some(endpoint) = options.traces_endpoint() else {
            return Ok(Self { provider: None });
        };
        if !endpoint.starts_with("http://") {
            return Err(TelemetryError::Exporter(format!(
                "endpoint `{endpoint}`: only http:// endpoints are supported; export through a local collector"
            )));
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(PlainHttpClient::new(EXPORT_TIMEOUT))
            .with_endpoint(endpoint.clone())
            .with_protocol(options.protocol()?)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_scheduled_delay(Duration::from_millis(options.otlp_delay_ms))
                    .build(),
            )
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(
                Resource::builder()
                    .with_service_name(options.service_name.clone())
                    .build(),
            )
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        tracing::info!(
            endpoint,
            service = options.service_name,
            "exporting spans over OTLP/HTTP"
        );
        Ok(Self {
            provider: Some(provider),
        })
    }

    /// Exports every finished span and stops the pipeline.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(error = %e, "flushing spans at shutdown failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> TelemetryOptions {
        TelemetryOptions {
            otlp_endpoint: None,
            otlp_traces_endpoint: None,
            otlp_protocol: None,
            otlp_traces_protocol: None,
            service_name: "shoal-sidecar".into(),
            otlp_delay_ms: 200,
            log: "info".into(),
        }
    }

    #[test]
    fn endpoint_resolution_follows_the_specification() {
        let mut o = options();
        assert_eq!(o.traces_endpoint(), None);
        o.otlp_endpoint = Some(String::new());
        assert_eq!(o.traces_endpoint(), None, "empty means unset");
        o.otlp_endpoint = Some("http://collector:4318/".into());
        assert_eq!(
            o.traces_endpoint().as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        o.otlp_traces_endpoint = Some("http://other:9999/custom".into());
        assert_eq!(
            o.traces_endpoint().as_deref(),
            Some("http://other:9999/custom")
        );
    }

    #[test]
    fn protocol_defaults_to_protobuf() {
        let mut o = options();
        assert_eq!(o.protocol().unwrap(), Protocol::HttpBinary);
        o.otlp_protocol = Some("http/json".into());
        assert_eq!(o.protocol().unwrap(), Protocol::HttpJson);
        o.otlp_traces_protocol = Some("http/protobuf".into());
        assert_eq!(o.protocol().unwrap(), Protocol::HttpBinary);
        o.otlp_traces_protocol = Some("grpc".into());
        assert!(o.protocol().is_err());
    }
}
