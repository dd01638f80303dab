//! The `bundlegate` binary: parse the command line, dispatch, print the report, exit 0/1/2.

#![warn(clippy::too_many_lines)]
// The entry point reads NO_COLOR and RUST_LOG before any adapter exists.
#![allow(clippy::disallowed_methods)]

use std::io::{IsTerminal, Write};

use clap::Parser;

use bundlegate::cli::Cli;
use bundlegate::report::format::format_report;
use bundlegate::report::redact::redact;

fn main() {
    let cli = Cli::parse();
    // Several clients (kube, object_store, octocrab) share rustls; pin one
    // process-wide crypto provider so none of them has to guess.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    init_logging(cli.verbose);
    let format = cli.format;
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let code = match bundlegate::dispatch::run(cli) {
        Ok(report) => {
            emit(&mut std::io::stdout().lock(), &format_report(&report, format, color));
            report.exit_code()
        }
        Err(f) => {
            // The tool could not finish (bad input, I/O); policy findings
            // never come here. The message goes to stderr, and the same
            // failure as an ERROR report in the chosen format to stdout.
            emit(&mut std::io::stderr().lock(), &format!("error: {:#}\n", f.error));
            if let Some(report) = f.report {
                emit(&mut std::io::stdout().lock(), &format_report(&report, format, color));
            }
            2
        }
    };
    std::process::exit(code);
}

/// Every byte for stdout or stderr passes here: credentials are cut out, and
/// a reader that went away (`| head`) ends the write quietly, as for cat or
/// grep; the exit code still says what the report found. `print!` would
/// panic on EPIPE (Rust ignores SIGPIPE).
fn emit(out: &mut dyn Write, text: &str) {
    let _ = out.write_all(redact(text).as_bytes()).and_then(|()| out.flush());
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
