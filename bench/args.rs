//! The arguments of a bench program that reads inputs a script wrote, run
//! as `cargo bench --bench NAME -- ARGS` (cargo adds `--bench`).

/// The `want` arguments after the program's name, `--bench` left out.
/// `None` when `cargo bench` ran the program bare (no inputs: nothing to
/// time); any other count prints `usage` and exits 2.
pub fn inputs(want: usize, usage: &str) -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.is_empty() && std::env::args().any(|a| a == "--bench") {
        eprintln!("no inputs (the bench/ script that runs it writes them); nothing timed. Usage: {usage}");
        return None;
    }
    if args.len() != want {
        eprintln!("usage: {usage}");
        std::process::exit(2);
    }
    Some(args)
}
