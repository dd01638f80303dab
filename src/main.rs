//! The `bundlegate` binary: parse the command line, dispatch, print the report, exit 0/1/2.

#![warn(clippy::too_many_lines)]
// The entry point reads NO_COLOR and RUST_LOG before any adapter exists.
#![allow(clippy::disallowed_methods)]

use std::io::{IsTerminal, Write};

use clap::Parser;

use bundlegate::cli::Cli;

fn main() {
    let cli = Cli::parse();
    // Several clients (kube, object_store, octocrab) share rustls; pin one
    // process-wide crypto provider so none of them has to guess.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    init_logging(cli.verbose);
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let out = bundlegate::dispatch::execute(cli, color);
    // stderr first: a failure's message, then its ERROR report on stdout.
    let err = emit(&mut std::io::stderr().lock(), &out.stderr);
    let mut written = emit(&mut std::io::stdout().lock(), &out.stdout);
    if let (Ok(()), Some(spool)) = (&written, out.spooled) {
        let mut stdout = std::io::stdout().lock();
        written = match spool.copy_to(&mut stdout).and_then(|()| stdout.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r,
        };
    }
    std::process::exit(exit_code(out.code, written, err, &mut std::io::stderr().lock()));
}

/// The report texts come redacted from `execute` (one redaction each). A
/// reader that went away (`| head`) ends the write quietly, as for cat or
/// grep (`print!` would panic on EPIPE: Rust ignores SIGPIPE); any other
/// failure is returned.
fn emit(out: &mut dyn Write, text: &str) -> std::io::Result<()> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// The exit code once the report was written: the report's own when both
/// writes went through, else 2 with why on stderr (as far as stderr
/// takes it). A report lost on a full disk must not read as a pass, nor
/// an empty `argocd generate` as a render Argo CD may apply.
fn exit_code(code: i32, stdout: std::io::Result<()>, stderr: std::io::Result<()>, log: &mut dyn Write) -> i32 {
    let mut failed = false;
    for (what, r) in [("standard output", stdout), ("standard error", stderr)] {
        if let Err(e) = r {
            failed = true;
            let _ = writeln!(log, "bundlegate: cannot write the report to {what}: {e}").and_then(|()| log.flush());
        }
    }
    if failed {
        2
    } else {
        code
    }
}

fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter =
        EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(format!("bundlegate={default},warn")));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(bundlegate::adapters::local::LogWriter::stderr)
        .with_target(false)
        .with_ansi(false)
        .init();
}
