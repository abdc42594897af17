//! The `upload-once-server` binary.

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
