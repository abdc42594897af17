//! `cargo xtask`: the project's two commands and their helpers.
//!
//! - `cargo xtask demo`: builds the npm package, starts the reference server
//!   with a demo event, serves the guest page.
//! - `cargo xtask test [layer ...]`: every test layer (core, server, browser,
//!   e2e, faults, cluster, size, bench); exits non-zero on any failure.
//!
//! Both install what a fresh Debian machine lacks (as root).

mod backends;
mod engines;
// Its store and test list are for the cluster layer (run.rs), which does
// not start it yet.
mod moto;
mod run;
mod server;
mod setup;

use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: cargo xtask <command>

  demo                 build the package, start the server at http://127.0.0.1:8080 with a demo event
  test [layer ...]     run the test suite (all layers, or: {})
  bench [--quick]      run the benchmarks and write docs/benchmarks.md
  soak [--uploads N] [--cluster]
                       chaos soak through the fault proxy, with a checker (docs/reliability.md);
                       --cluster: on two instances behind nginx, PostgreSQL and moto
  setup                install what is missing (toolchain, browsers, npm packages, moto, nginx)",
        run::LAYERS.join(", ")
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => run::demo(&args[1..]),
        Some("test") => run::test(&args[1..]),
        Some("bench") => run::bench(&args[1..]),
        Some("soak") => run::soak(&args[1..]),
        Some("setup") => setup::ensure_all(true)
            .and_then(|()| engines::ensure_engines("setup").map(drop))
            .and_then(|()| setup::ensure_npm_packages())
            .and_then(|()| moto::ensure_moto().map(drop))
            .and_then(|()| setup::ensure_nginx().map(drop)),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
