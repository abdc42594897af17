//! Test-only hooks, enabled with `--test-hooks`: hold every object-store
//! HEAD for a while, or hold every confirm inside its transaction (just
//! after it took the attempt's row lock), so a test can stop a confirm there
//! from outside the server (then run the sweeper, or kill the process).
//! Off by default; never enable them in production.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use crate::error::Result;
use crate::storage::intercept::{Call, Interceptor, Operation};

/// The hooks' settings.
#[derive(Debug, Default)]
pub struct TestHooks {
    head_delay_ms: AtomicU64,
    confirm_hold_ms: AtomicU64,
    confirm_gate: Mutex<Option<Arc<Gate>>>,
}

/// `POST /v1/admin/test-hooks` body. A field left out is 0.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct TestHooksRequest {
    /// How long every object HEAD waits (0: not at all). A confirm asks the
    /// store before it takes the attempt's lock, so this holds it outside
    /// its transaction.
    #[serde(default)]
    pub head_delay_ms: u64,
    /// How long every confirm waits inside its transaction, holding the
    /// attempt's row lock (0: not at all).
    #[serde(default)]
    pub confirm_hold_ms: u64,
    /// The request's handler panics once the hooks are set: a bug, as the
    /// server meets it, for a test that one panic costs one request.
    #[serde(default)]
    pub panic: bool,
}

/// Holds confirms inside their transaction until released (for tests in
/// Rust, which wait for it rather than for a time).
#[derive(Debug)]
pub struct Gate {
    /// Notified as each confirm arrives at the gate.
    pub entered: tokio::sync::Notify,
    /// One permit lets one confirm through.
    pub release: tokio::sync::Semaphore,
}

impl TestHooks {
    /// Applies new settings.
    pub fn set(&self, request: &TestHooksRequest) {
        self.head_delay_ms.store(request.head_delay_ms, Ordering::SeqCst);
        self.confirm_hold_ms.store(request.confirm_hold_ms, Ordering::SeqCst);
        tracing::warn!(
            head_delay_ms = request.head_delay_ms,
            confirm_hold_ms = request.confirm_hold_ms,
            "test hooks set"
        );
    }

    /// Holds every later confirm inside its transaction at the returned
    /// gate, until a permit releases it.
    pub fn gate_confirms(&self) -> Arc<Gate> {
        let gate = Arc::new(Gate { entered: tokio::sync::Notify::new(), release: tokio::sync::Semaphore::new(0) });
        *self.confirm_gate.lock().expect("gate lock") = Some(gate.clone());
        gate
    }

    /// Where a confirm that holds its attempt's row lock waits, when told to.
    pub async fn hold_confirm(&self) {
        let delay = self.confirm_hold_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        let gate = self.confirm_gate.lock().expect("gate lock").clone();
        if let Some(gate) = gate {
            gate.entered.notify_one();
            if let Ok(permit) = gate.release.acquire().await {
                permit.forget();
            }
        }
    }
}

/// Holds every object-store HEAD for the test hooks' delay (wrapped around
/// the store with [`crate::storage::intercept::Intercepted`]).
pub struct HeldHeads(pub Arc<TestHooks>);

#[async_trait]
impl Interceptor for HeldHeads {
    async fn before(&self, call: Call<'_>) -> Result<()> {
        let delay = self.0.head_delay_ms.load(Ordering::SeqCst);
        if call.operation == Operation::Head && delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        Ok(())
    }
}
