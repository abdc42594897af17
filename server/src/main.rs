//! The `upload-once-server` binary.

// One panic must cost one request (the catch-panic layer answers it 500),
// never the process and every upload in flight.
#[cfg(panic = "abort")]
compile_error!(
    "upload-once-server must unwind on a panic: build it with `--profile server` (docs/deploy.md), not `--release`, whose `panic = \"abort\"` is the wasm package's"
);

use clap::Parser;
use upload_once_server::{Config, logs, run};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let config = Config::parse();
    logs::init(config.log_format);
    match run(config).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("upload-once-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
