//! What the server does on its own behalf, whatever its clients do: every
//! request's handler runs to its end even when the client hangs up, and the
//! database is probed back to life; the record of it is [`crate::ops::Ops`].
//!
//! A client that closes its connection makes hyper drop the request's
//! future. Were the handler that future, a hang-up could stop it anywhere:
//! halfway through a transaction, between a `BEGIN` and the value that
//! would have rolled it back. [`run_to_completion`] runs the handler as a
//! task of its own and only waits for it, so a hang-up costs the client its
//! answer and nothing else.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::DatabaseFailure;
use crate::ops::{HangUpWatch, InFlight, LOCK_WAIT, PROBE_EVERY, READINESS_TTL_MS, Readiness};
use crate::state::AppState;

/// Whether the server should get traffic: the database takes writes and the
/// object store can take uploads. Probed at most once per
/// [`READINESS_TTL_MS`]; callers meanwhile share the last answer (one
/// probe at a time: the others wait for it).
pub async fn readiness(state: &AppState) -> Readiness {
    let mut last = state.ops.readiness.lock().await;
    if let Some((at, found)) = last.as_ref() {
        if (0..READINESS_TTL_MS).contains(&(state.now() - at)) {
            return found.clone();
        }
    }
    let (database, objects) = tokio::join!(probe_database(state), probe_objects(state));
    let database = database.err().map(|e| format!("the database does not take writes: {e}"));
    let objects = objects.err().map(|e| match e {
        crate::error::Error::ObjectStore(reason) => format!("the object store cannot take uploads: {reason}"),
        other => format!("the object store cannot take uploads: {other}"),
    });
    let code = match (&database, &objects) {
        (None, None) => None,
        (Some(_), _) => Some(upload_once_core::ErrorCode::DatabaseUnavailable),
        (None, Some(_)) => Some(upload_once_core::ErrorCode::ObjectStoreUnavailable),
    };
    let found = code.map(|code| (code, [database, objects].into_iter().flatten().collect::<Vec<_>>().join("; ")));
    *last = Some((state.now(), found.clone()));
    found
}

/// Probes the database for writes: the readiness check's answer, with the
/// health record updated (an outage starts or ends here too).
pub async fn probe_database(state: &AppState) -> crate::error::Result<()> {
    let probe = tokio::time::timeout(LOCK_WAIT, state.records.probe_write(state.now())).await;
    let result = match probe {
        Ok(result) => result,
        Err(_) => Err(crate::error::Error::Database(sqlx::Error::PoolTimedOut)),
    };
    match &result {
        Ok(()) => state.ops.database_ok(),
        Err(e) => {
            if state.ops.database_failed(&e.to_string()) {
                heal(state.clone());
            }
        }
    }
    result
}

/// Probes the object store: whether it can take uploads, answered within
/// [`LOCK_WAIT`].
pub async fn probe_objects(state: &AppState) -> crate::error::Result<()> {
    match tokio::time::timeout(LOCK_WAIT, state.objects.probe()).await {
        Ok(result) => result,
        Err(_) => Err(crate::error::Error::ObjectStore(format!("no answer within {} s", LOCK_WAIT.as_secs()))),
    }
}

/// Probes a failing database every second until it takes writes again (the
/// recovery is logged by [`Ops::database_ok`]).
fn heal(state: AppState) {
    tokio::spawn(async move {
        while state.ops.database_outage().is_some() {
            tokio::time::sleep(PROBE_EVERY).await;
            let probe = tokio::time::timeout(LOCK_WAIT, state.records.probe_write(state.now())).await;
            if let Ok(Ok(())) = probe {
                state.ops.database_ok();
            }
        }
    });
}

/// Middleware: runs the request's handler as a task of its own, so no
/// client can cancel the server's durable work halfway (a hang-up only
/// loses the answer), counts hang-ups, and reports database failures to
/// the health record.
pub async fn run_to_completion(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mut watch =
        HangUpWatch { ops: &state.ops, route: Some(format!("{} {}", request.method(), request.uri().path())) };
    let running = InFlight::start(state.ops.clone());
    let handler = async move {
        let _running = running;
        next.run(request).await
    };
    // In the request's span, so what the handler logs carries its id.
    let response = match tokio::spawn(tracing::Instrument::in_current_span(handler)).await {
        Ok(response) => response,
        // The handler panicked: let the panic layer answer it.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => crate::error::problem_response(
            upload_once_core::ErrorCode::Internal,
            "the server is shutting down".to_owned(),
        ),
    };
    watch.route = None;
    if let Some(DatabaseFailure(reason)) = response.extensions().get::<DatabaseFailure>() {
        if state.ops.database_failed(reason) {
            heal(state.clone());
        }
    }
    response
}
