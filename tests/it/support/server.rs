//! Every server process the tests start (git daemon, s3s-fs, Prometheus,
//! the Pushgateway) goes through [`spawn`]: it runs in a process group of its
//! own, its pid is recorded in the run's registry folder, and dropping the
//! [`Server`] kills the whole group (a wrapper's children too), also when the
//! test panics. `scripts/check-no-leftovers` names any of them (or a child
//! they started) still alive after the test command ends.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};

/// The run's registry: `BUNDLEGATE_TEST_PIDS` (scripts/test makes a fresh
/// one per run), else `target/test-processes`.
pub fn registry() -> PathBuf {
    std::env::var_os("BUNDLEGATE_TEST_PIDS")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::repo().join("target/test-processes"))
}

/// Field 22 of /proc/PID/stat (clock ticks after boot): with the pid it
/// names one process, so a pid reused later is not taken for it.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A server process, leader of its own process group.
pub struct Server {
    child: Child,
    /// Set once the leader is reaped: its pid (and group id) may then be
    /// reused, so the group is no longer signalled.
    reaped: bool,
}

/// Start `cmd` in a new process group (its pgid is its pid) and record it.
pub fn spawn(cmd: &mut Command) -> Server {
    use std::os::unix::process::CommandExt;
    let child = cmd.process_group(0).spawn().unwrap_or_else(|e| panic!("starting {:?}: {e}", cmd.get_program()));
    let dir = registry();
    std::fs::create_dir_all(&dir).unwrap();
    let pid = child.id();
    let record = format!("{pid} {} {}\n", start_time(pid).unwrap_or(0), cmd.get_program().to_string_lossy());
    std::fs::write(dir.join(pid.to_string()), record).unwrap();
    Server { child, reaped: false }
}

impl Server {
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        let r = self.child.try_wait();
        if matches!(r, Ok(Some(_))) {
            self.reaped = true;
        }
        r
    }

    /// Kill the whole group (SIGKILL: nothing to shut down cleanly in a
    /// test), then reap the leader. Idempotent.
    pub fn stop(&mut self) {
        if !self.reaped {
            // The leader is not reaped yet, so the group id is still ours.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.child.id())]).status();
            let _ = self.child.wait();
            self.reaped = true;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
