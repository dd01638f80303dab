//! The watch's polling loops: the same reads (the Argo CD Application, the
//! release's workload, git to place a revision) repeated on a clock until
//! the pure state machine fed with them settles or the deadline passes.
//! What to conclude is `checks::watch`'s (`ArgoWatch`, `RolloutWatch`);
//! this file only reads and sleeps.

use std::time::{Duration, Instant};

use crate::adapters::git;
use crate::adapters::kube as io;
use crate::adapters::model::IdentitySampler;
use crate::bundle::Loaded;
use crate::checks::watch::rollout::IdentitySample;
use crate::checks::watch::stability::RolloutWatch;
use crate::checks::watch::steps::ArgoWatch;

/// One watch's clock: how often to read, from when, until when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub every: Duration,
    pub started: Instant,
    pub deadline: Instant,
}

impl Clock {
    /// Seconds since the watch started.
    pub(crate) fn at(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

async fn sleep_until_next(every: Duration, until: Instant) {
    let left = until.saturating_duration_since(Instant::now());
    tokio::time::sleep(every.min(left)).await;
}

/// Read the Application `ns/name` into `w` until it settles or the deadline
/// passes; a revision it has not placed yet is looked up in the bundle's
/// git history (`rev`: the merge commit).
pub(crate) async fn application(
    client: &kube::Client,
    (ns, name): (&str, &str),
    l: &Loaded,
    rev: Option<&str>,
    w: &mut ArgoWatch,
    clock: Clock,
) {
    loop {
        match io::application(client, ns, name).await {
            Ok(a) => {
                let history = match (&a, rev) {
                    (Some(app), Some(merge)) => {
                        let new = w.unplaced(app);
                        (!new.is_empty()).then(|| git::history(&l.path, merge, &new, &app.sources))
                    }
                    _ => None,
                };
                w.read(a, history.as_ref());
            }
            Err(e) => w.failed(format!("{e:#}"), io::is_denied(&e)),
        }
        if w.settled() || Instant::now() >= clock.deadline {
            return;
        }
        sleep_until_next(clock.every, clock.deadline).await;
    }
}

/// What following a rollout read: the watch fed with every read, the last
/// read's error (None: it answered) and the identity answers taken while
/// the stability window ran.
pub(crate) struct Followed {
    pub watch: RolloutWatch,
    pub last_err: Option<String>,
    pub identity: Vec<IdentitySample>,
}

/// Read the release's workload into `watch` until the rollout settles and
/// holds for the stability window (or gives up, or the deadline passes with
/// no window started). While the window runs, the identity endpoint is
/// asked (`identity`: the client and URL).
pub(crate) async fn rollout(
    client: &kube::Client,
    l: &Loaded,
    mut watch: RolloutWatch,
    window: Duration,
    clock: Clock,
    identity: Option<(reqwest::Client, String)>,
) -> Followed {
    let (ns, name) = (&l.bundle.metadata.namespace, &l.bundle.metadata.name);
    let workload = watch.workload();
    let mut last_err: Option<String>;
    let mut closing_read = false;
    let mut sampler: Option<IdentitySampler> = None;
    loop {
        match io::service_state(client, ns, name, workload).await {
            Ok(st) => {
                last_err = None;
                if watch.observe(clock.at(), st) {
                    break;
                }
            }
            Err(e) => last_err = Some(format!("{e:#}")),
        }
        if sampler.is_none() && watch.window_end().is_some() {
            if let Some((http, url)) = &identity {
                sampler = Some(IdentitySampler::start(http.clone(), url.clone(), window, clock.started));
            }
        }
        // A window that started before the deadline runs to its end.
        let until = match watch.window_end() {
            Some(end) => clock.deadline.max(clock.started + Duration::from_secs_f64(end.max(0.0))),
            None => clock.deadline,
        };
        if Instant::now() >= until {
            // The window's last read is taken at its end, not before it.
            if watch.window_end().is_some() && !closing_read {
                closing_read = true;
                continue;
            }
            break;
        }
        sleep_until_next(clock.every, until).await;
    }
    let identity = match sampler {
        Some(s) => s.finish().await,
        None => Vec::new(),
    };
    Followed { watch, last_err, identity }
}
