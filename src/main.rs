//! The `bundlegate` binary: parse the command line, dispatch, print the report, exit 0/1/2.

#![warn(clippy::too_many_lines)]
// The entry point reads NO_COLOR and RUST_LOG before any adapter exists.
#![allow(clippy::disallowed_methods)]

use std::io::{IsTerminal, Write};

use clap::Parser;

use bundlegate::cli::Cli;
use bundlegate::report::redact::redact;

fn main() {
    let cli = Cli::parse();
    // Several clients (kube, object_store, octocrab) share rustls; pin one
    // process-wide crypto provider so none of them has to guess.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    init_logging(cli.verbose);
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let out = bundlegate::dispatch::execute(cli, color);
    // stderr first: a failure's message, then its ERROR report on stdout.
    emit(&mut std::io::stderr().lock(), &out.stderr);
    emit(&mut std::io::stdout().lock(), &out.stdout);
    std::process::exit(out.code);
}

/// The report texts come redacted from `execute` (one redaction each); a
/// reader that went away (`| head`) ends the write quietly, as for cat or
/// grep; the exit code still says what the report found. `print!` would
/// panic on EPIPE (Rust ignores SIGPIPE).
fn emit(out: &mut dyn Write, text: &str) {
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Log lines go through the same redaction as the report.
struct RedactingStderr;

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        // A closed stderr must not fail the command; the log is advisory.
        let _ = std::io::stderr().lock().write_all(redact(&text).as_bytes());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
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
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(|| RedactingStderr).with_target(false).init();
}
