//! The `upload-once-server` binary.

use clap::Parser;
use tracing_subscriber::EnvFilter;
use upload_once_server::{Config, run};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=warn")))
        .init();
    let config = Config::parse();
    match run(config).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("upload-once-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
