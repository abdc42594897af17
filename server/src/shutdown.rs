//! Serving connections, and stopping gracefully.
//!
//! [`serve`] accepts connections itself (rather than through `axum::serve`)
//! for three things that loop does not offer:
//!
//! - a **header-read timeout** (`--header-timeout`): a client that does
//!   not send a whole request head in time (a slowloris) is disconnected
//!   without ever reaching a handler; the same timeout closes keep-alive
//!   connections that stay idle;
//! - the **peer's address** on every request ([`ConnectInfo`]), which the
//!   rate limits key on ([`crate::limits`]);
//! - **graceful shutdown** with a deadline: on the signal the listener is
//!   closed, idle connections are closed, and requests in flight — a
//!   confirm in its transaction, an upload — may finish for up to
//!   `--shutdown-timeout`, including handlers whose client already hung up
//!   ([`crate::routes::operations::run_to_completion`]). Past the deadline the server
//!   gives up on them: whatever had not committed is rolled back by the
//!   database, and the client asks again (every step is idempotent).
//!   A keep-alive connection from a `--trusted-proxy` is not closed while
//!   idle: a load balancer may be writing a request on it at that moment,
//!   and a POST it has sent it never sends to another instance (nginx
//!   answers it `502`). So such a connection stays open for
//!   `--shutdown-proxy-grace`, every answer from then on says
//!   `Connection: close`, and the proxy, whose idle timeout is shorter,
//!   closes what it does not use.

use std::future::Future;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, header};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;

use crate::state::AppState;

/// How often idle clients are dropped from the rate limiters' memory.
const FORGET_IDLE_CLIENTS_EVERY: Duration = Duration::from_secs(60);

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
}

/// Serves the whole app ([`crate::routes::app`]) on `listener` until
/// `shutdown` resolves, then stops gracefully: no new connection is
/// accepted, and it returns once every request in flight has finished, or
/// after `--shutdown-timeout`, whichever comes first.
pub async fn serve<F>(listener: TcpListener, state: AppState, shutdown: F)
where
    F: Future<Output = ()> + Send,
{
    let router = crate::routes::app(state.clone());
    let header_timeout = state.limits.config.header_timeout;
    let proxy_grace = state.limits.config.shutdown_proxy_grace;
    let trusted_proxies = state.limits.config.trusted_proxies.clone();
    let forget = tokio::spawn({
        let limits = state.limits.clone();
        async move {
            let mut every = tokio::time::interval(FORGET_IDLE_CLIENTS_EVERY);
            loop {
                every.tick().await;
                limits.forget_idle_clients();
            }
        }
    });
    // `stop` tells connections to finish; each holds a `open` receiver
    // until it is closed.
    let (stop, stopping) = watch::channel(false);
    let (open, open_connection) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, say: wait a little rather than spin.
                    tracing::error!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let answers_stopping = stopping.clone();
        let service = router
            .clone()
            .map_request(move |mut request: hyper::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request.map(Body::new)
            })
            .map_response(move |mut response: axum::response::Response| {
                // Stopping: this answer is the connection's last.
                if *answers_stopping.borrow() {
                    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                response
            });
        // Idle connections close at once on the stop, but a proxy's only
        // after the grace (unless it closes them first).
        let grace =
            if trusted_proxies.iter().any(|net| net.contains(peer.ip())) { proxy_grace } else { Duration::ZERO };
        let mut stopping = stopping.clone();
        let connection_open = open_connection.clone();
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(header_timeout).keep_alive(true);
            let connection = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
            let mut connection = std::pin::pin!(connection);
            let stop = async move {
                let _ = stopping.wait_for(|stop| *stop).await;
            };
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = stop => {
                    let closed_by_now = tokio::select! {
                        result = connection.as_mut() => Some(result),
                        () = tokio::time::sleep(grace) => None,
                    };
                    match closed_by_now {
                        Some(result) => result,
                        None => {
                            // Finishes the request under way, if any, then closes.
                            connection.as_mut().graceful_shutdown();
                            connection.await
                        }
                    }
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, "connection ended: {e}");
            }
            drop(connection_open);
        });
    }
    drop(listener);
    drop(open_connection);
    let deadline = state.limits.config.shutdown_timeout;
    tracing::info!(
        requests_in_flight = state.ops.requests_in_flight(),
        "shutting down: no new connections; requests in flight may finish for {} s",
        deadline.as_secs_f64()
    );
    let _ = stop.send(true);
    let drained = async {
        open.closed().await;
        // Handlers whose client hung up still run to their end.
        while state.ops.requests_in_flight() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    match tokio::time::timeout(deadline, drained).await {
        Ok(()) => tracing::info!("every request in flight finished"),
        Err(_) => tracing::warn!(
            requests_in_flight = state.ops.requests_in_flight(),
            "gave up on the requests still in flight after {} s (what they had not committed is rolled back)",
            deadline.as_secs_f64()
        ),
    }
    forget.abort();
}
