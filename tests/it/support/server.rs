//! Every server process the tests start (git daemon, s3s-fs, Prometheus,
//! the Pushgateway) goes through [`spawn`]: it runs in a process group of its
//! own and its pid is recorded in the run's registry folder, so
//! `scripts/check-no-leftovers` can name any of them (or a child they
//! started) still alive after the test command ends.

use std::path::PathBuf;
use std::process::{Child, Command};

/// The run's registry: `BUNDLEGATE_TEST_PIDS` (scripts/test makes a fresh
/// one per run), else `target/test-processes`.
pub fn registry() -> PathBuf {
    std::env::var_os("BUNDLEGATE_TEST_PIDS").map(PathBuf::from).unwrap_or_else(|| super::repo().join("target/test-processes"))
}

/// Field 22 of /proc/PID/stat (clock ticks after boot): with the pid it
/// names one process, so a pid reused later is not taken for it.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Start `cmd` in a new process group (its pgid is its pid) and record it.
pub fn spawn(cmd: &mut Command) -> Child {
    use std::os::unix::process::CommandExt;
    let child = cmd.process_group(0).spawn().unwrap_or_else(|e| panic!("starting {:?}: {e}", cmd.get_program()));
    let dir = registry();
    std::fs::create_dir_all(&dir).unwrap();
    let pid = child.id();
    let record = format!("{pid} {} {}\n", start_time(pid).unwrap_or(0), cmd.get_program().to_string_lossy());
    std::fs::write(dir.join(pid.to_string()), record).unwrap();
    child
}
