//! W3C trace context from request frames, and the sidecar's spans under it.

use std::time::SystemTime;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// Instrumentation scope of every span the sidecar records.
const SCOPE: &str = "shoal-sidecar";

struct Traceparent<'a>(&'a str);

impl Extractor for Traceparent<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == "traceparent").then_some(self.0)
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

/// The remote parent named by a `traceparent` string, or `None` when it is not a valid W3C
/// context. Invalid contexts are ignored rather than refused, as the W3C specification asks.
pub(crate) fn parse(traceparent: &str) -> Option<Context> {
    let cx = TraceContextPropagator::new().extract(&Traceparent(traceparent));
    cx.span().span_context().is_valid().then_some(cx)
}

/// Every distinct valid parent among `traceparents`, in first-seen order. With none, one
/// empty context, so that the work still gets a (root) span.
pub(crate) fn distinct_parents<'a>(
    traceparents: impl IntoIterator<Item = &'a str>,
) -> Vec<Context> {
    let mut seen = Vec::new();
    let mut parents = Vec::new();
    for cx in traceparents.into_iter().filter_map(parse) {
        let sc = cx.span().span_context().clone();
        let key = (sc.trace_id(), sc.span_id());
        if !seen.contains(&key) {
            seen.push(key);
            parents.push(cx);
        }
    }
    if parents.is_empty() {
        parents.push(Context::new());
    }
    parents
}

/// The trace id of `cx` as 32 hex digits, for log lines, or `None` for a root context.
pub(crate) fn trace_id(cx: &Context) -> Option<String> {
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

/// Records one span called `name` under each of `parents`, all with the same timing and
/// attributes: work shared by several requests shows up in each request's trace.
pub(crate) fn record(
    name: &'static str,
    parents: &[Context],
    start: SystemTime,
    end: SystemTime,
    attributes: &[KeyValue],
    error: Option<&str>,
) {
    let tracer = global::tracer(SCOPE);
    for parent in parents {
        let mut span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes.to_vec())
            .start_with_context(&tracer, parent);
        if let Some(message) = error {
            span.set_status(Status::error(message.to_owned()));
        }
        span.end_with_timestamp(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const B: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn parses_valid_contexts_and_ignores_the_rest() {
        let cx = parse(A).expect("valid");
        assert_eq!(
            trace_id(&cx).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        for bad in [
            "",
            "garbage",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        ] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn parents_are_distinct_and_never_empty() {
        let parents = distinct_parents([A, B, A, "junk"]);
        let ids: Vec<_> = parents.iter().filter_map(trace_id).collect();
        assert_eq!(
            ids,
            [
                "4bf92f3577b34da6a3ce929d0e0e4736",
                "0af7651916cd43dd8448eb211c80319c"
            ]
        );
        let root = distinct_parents(["junk"]);
        assert_eq!(root.len(), 1);
        assert_eq!(trace_id(&root[0]), None);
    }
}
