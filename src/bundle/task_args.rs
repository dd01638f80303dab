//! The arguments that tell the serving runtime which task to run a model
//! for, by engine and version (`spec.runtime.engine`), as each runtime
//! documents them for that version. A chat or completion release renders as
//! before: these runtimes generate unless told otherwise.

use crate::bundle::{ReleaseBundle, Task};

/// A version `major.minor.patch` (a leading `v`, missing parts as 0, a
/// suffix such as `rc1` or `+cu128` ignored); `None` when it starts with no number.
fn version(v: &str) -> Option<(u32, u32, u32)> {
    let mut parts = v.trim().trim_start_matches('v').split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let major = parts.next().flatten()?;
    Some((major, parts.next().flatten().unwrap_or(0), parts.next().flatten().unwrap_or(0)))
}

/// The arguments to add for the task; empty when the runtime needs none or
/// its version does not take one (docs/tasks.md says which). A flag the
/// bundle's `spec.runtime.args` already sets is left to the bundle.
pub(crate) fn task_args(b: &ReleaseBundle) -> Vec<String> {
    let e = &b.spec.runtime.engine;
    let Some(v) = version(&e.version) else { return Vec::new() };
    let task = b.spec.model.task;
    let args: Vec<String> = match e.name.to_ascii_lowercase().as_str() {
        // vLLM 0.10.1 replaced `--task` with `--runner pooling` (the pooling
        // task follows from the model's architecture); 0.8 to 0.10.0 take
        // `--task embed|score|classify`.
        "vllm" => match (task, v >= (0, 10, 1), v >= (0, 8, 0)) {
            (Task::Embedding | Task::Rerank | Task::Classification, true, _) => {
                vec!["--runner".into(), "pooling".into()]
            }
            (Task::Embedding, false, true) => vec!["--task".into(), "embed".into()],
            (Task::Rerank, false, true) => vec!["--task".into(), "score".into()],
            (Task::Classification, false, true) => vec!["--task".into(), "classify".into()],
            _ => Vec::new(),
        },
        // KServe's Hugging Face server (`--task`, its MLTask names):
        // `text_embedding` from KServe 0.14; a reranker is a sequence classifier.
        "huggingface" | "kserve-huggingface" | "huggingfaceserver" => match task {
            Task::Embedding if v >= (0, 14, 0) => vec!["--task=text_embedding".into()],
            Task::Rerank | Task::Classification => vec!["--task=sequence_classification".into()],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let flag = |a: &str| a.split('=').next().unwrap_or(a).to_string();
    let set = |f: &str| b.spec.runtime.args.iter().any(|a| flag(a) == f);
    match args.first() {
        Some(first) if set(&flag(first)) => Vec::new(),
        _ => args,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(engine: &str, ver: &str, task: Task, given: &[&str]) -> Vec<String> {
        let mut b = crate::bundle::example().bundle;
        b.spec.runtime.engine.name = engine.into();
        b.spec.runtime.engine.version = ver.into();
        b.spec.model.task = task;
        b.spec.runtime.args = given.iter().map(|s| s.to_string()).collect();
        task_args(&b)
    }

    /// Each runtime's flag for each task at the versions that changed it;
    /// nothing for generating tasks, unknown engines or versions, or a flag
    /// the bundle sets itself.
    #[test]
    fn each_runtime_gets_its_documented_task_flag_by_version() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for t in [Task::Embedding, Task::Rerank, Task::Classification] {
            assert_eq!(args("vllm", "0.10.1", t, &[]), s(&["--runner", "pooling"]), "{t:?}");
            assert_eq!(args("vLLM", "v0.11.0", t, &[]), s(&["--runner", "pooling"]), "{t:?}");
            assert!(args("vllm", "0.7.3", t, &[]).is_empty(), "{t:?}");
        }
        assert_eq!(args("vllm", "0.10.0", Task::Embedding, &[]), s(&["--task", "embed"]));
        assert_eq!(args("vllm", "0.8.0", Task::Rerank, &[]), s(&["--task", "score"]));
        assert_eq!(args("vllm", "0.9.2", Task::Classification, &[]), s(&["--task", "classify"]));
        for t in [Task::Chat, Task::Completion, Task::Other] {
            assert!(args("vllm", "0.11.0", t, &[]).is_empty(), "{t:?}");
            assert!(args("huggingface", "0.15.0", t, &[]).is_empty(), "{t:?}");
        }
        assert_eq!(args("huggingface", "0.14.0", Task::Embedding, &[]), s(&["--task=text_embedding"]));
        assert!(args("huggingface", "0.13.1", Task::Embedding, &[]).is_empty());
        assert_eq!(args("huggingface", "0.15.2", Task::Rerank, &[]), s(&["--task=sequence_classification"]));
        assert!(args("fastapi-torch", "2.11.0", Task::Embedding, &[]).is_empty());
        assert!(args("vllm", "nightly", Task::Embedding, &[]).is_empty());
        assert!(args("vllm", "0.11.0", Task::Embedding, &["--runner=pooling"]).is_empty());
        assert!(args("huggingface", "0.15.0", Task::Embedding, &["--task", "text_embedding"]).is_empty());
        assert_eq!(version("0.10.1rc1+cu128"), Some((0, 10, 1)));
        assert_eq!(version("1"), Some((1, 0, 0)));
    }
}
