use std::io::IsTerminal;

use clap::Parser;

use bundlegate::cli::Cli;
use bundlegate::report::render::render;

fn main() {
    let cli = Cli::parse();
    // Several clients (kube, object_store, octocrab) share rustls; pin one
    // process-wide crypto provider so none of them has to guess.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    init_logging(cli.verbose);
    let format = cli.format;
    let code = match bundlegate::app::run(cli) {
        Ok(report) => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            print!("{}", render(&report, format, color));
            report.exit_code()
        }
        Err(e) => {
            // `Err` means the tool could not finish (bad input, I/O); policy
            // findings never come here.
            eprintln!("error: {e:#}");
            2
        }
    };
    std::process::exit(code);
}

fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new(format!("bundlegate={default},warn")));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
}
