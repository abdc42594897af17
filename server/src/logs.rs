//! The server's logs: JSON lines (the default, for log pipelines) or
//! human-readable text (`--log-format text`). Every event logged while a
//! request is handled carries that request's id, the `x-request-id` the
//! answer also carries, with its method and path.

use axum::http::Request;
use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// The filter when `RUST_LOG` sets none.
pub const DEFAULT_FILTER: &str = "info,sqlx=warn,tower_http=warn";

/// The header that carries a request's id, in the request (set here unless
/// a load balancer set it) and in its answer.
pub const REQUEST_ID: &str = "x-request-id";

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields`
    /// (the message and its values) and `span` (the request: `request_id`,
    /// `method`, `path`).
    #[default]
    Json,
    /// Human-readable lines, for a terminal (coloured when standard output
    /// is one).
    Text,
}

/// A subscriber writing `format` lines that pass `filter` to `writer`.
pub fn subscriber<W>(format: LogFormat, filter: EnvFilter, writer: W) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer);
    match format {
        LogFormat::Json => Box::new(builder.json().with_current_span(true).with_span_list(false).finish()),
        LogFormat::Text => Box::new(builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout())).finish()),
    }
}

/// Logs to standard output in `format`, filtered by `RUST_LOG` (default
/// [`DEFAULT_FILTER`]).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let _ = tracing::subscriber::set_global_default(subscriber(format, filter, std::io::stdout));
}

/// The span every request is handled in. It is an `ERROR`-level span so it
/// is on whenever any event is logged, and it names the path, never the
/// query (which may carry URL signatures and guest codes).
pub fn request_span<B>(request: &Request<B>) -> tracing::Span {
    let id = request.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or_default();
    tracing::error_span!("request", request_id = %id, method = %request.method(), path = %request.uri().path())
}
