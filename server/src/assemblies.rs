//! The multipart uploads this instance is assembling now.

/// Which multipart uploads this instance is assembling now: confirms of
/// one attempt that race each other assemble it once (the others wait for
/// the first, then find its object). Assembly runs before the attempt's row
/// lock, so a slow store holds nothing in the database while it assembles.
#[derive(Debug, Default)]
pub struct Assemblies {
    running: std::sync::Mutex<std::collections::HashMap<String, std::sync::Weak<tokio::sync::Mutex<()>>>>,
}

impl Assemblies {
    /// The gate of the object `key`: held while it is being assembled.
    pub fn gate(&self, key: &str) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        let mut running = self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(gate) = running.get(key).and_then(std::sync::Weak::upgrade) {
            return gate;
        }
        // Gates nobody holds any more are dropped as new ones are made.
        running.retain(|_, gate| gate.strong_count() > 0);
        let gate = std::sync::Arc::new(tokio::sync::Mutex::new(()));
        running.insert(key.to_owned(), std::sync::Arc::downgrade(&gate));
        gate
    }
}
