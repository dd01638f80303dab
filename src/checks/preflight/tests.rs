//! Preflight's passes judged end to end (`preflight` on the shipped
//! example) over small cluster states built in code: one Kubernetes rule
//! per test, each state the smallest that shows it.

use super::*;

fn quantities(kv: &[(&str, &str)]) -> Quantities {
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A GPU node the example's pod may go to (its nodeSelector label set).
fn gpu_node(name: &str, alloc: &[(&str, &str)]) -> Node {
    Node {
        name: name.into(),
        labels: [("nvidia.com/gpu.present".to_string(), "true".to_string())].into(),
        allocatable: quantities(alloc),
        ..Node::default()
    }
}

const ROOMY: &[(&str, &str)] = &[("cpu", "16"), ("memory", "64Gi"), ("nvidia.com/gpu", "4"), ("pods", "110")];

/// A running pod in the example's namespace.
fn pod(name: &str, app: &str, node: &str, requests: &[(&str, &str)]) -> Pod {
    Pod {
        namespace: "ai-lab".into(),
        name: name.into(),
        node_name: Some(node.into()),
        phase: Some("Running".into()),
        labels: [("app.kubernetes.io/name".to_string(), app.to_string())].into(),
        containers: vec![ContainerResources { requests: quantities(requests), limits: Quantities::new() }],
        ..Pod::default()
    }
}

fn quota(hard: &[(&str, &str)], used: &[(&str, &str)]) -> Quota {
    Quota {
        namespace: "ai-lab".into(),
        name: "q".into(),
        hard: quantities(hard),
        used: Some(quantities(used)),
        ..Quota::default()
    }
}

fn run(l: &Loaded, st: &ClusterState) -> Outcome {
    preflight(l, st).expect("the example evaluates")
}

fn codes(o: &Outcome) -> Vec<&'static str> {
    o.diagnostics.iter().map(|d| d.code.as_str()).collect()
}

/// Every diagnostic's message and evidence, one per line.
fn text(o: &Outcome) -> String {
    o.diagnostics
        .iter()
        .flat_map(|d| std::iter::once(d.message.clone()).chain(d.evidence.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The findings say `line` (in a message or an evidence line).
fn assert_says(o: &Outcome, line: &str) {
    assert!(text(o).contains(line), "{line:?} not in:\n{}", text(o));
}

fn with_quota(q: Quota) -> ClusterState {
    ClusterState { nodes: vec![gpu_node("gpu-a", ROOMY)], quotas: vec![q], ..ClusterState::default() }
}

/// Evidence lists are cut at MAX_EVIDENCE lines with a count of the rest;
/// exactly that many are shown whole.
#[test]
fn evidence_is_capped_with_a_count_of_the_rest() {
    let lines = |n: usize| (0..n).map(|i| format!("line {i}")).collect::<Vec<_>>();
    assert_eq!(capped(lines(MAX_EVIDENCE), "pods"), lines(MAX_EVIDENCE));
    let cut = capped(lines(MAX_EVIDENCE + 3), "pods");
    assert_eq!(cut.len(), MAX_EVIDENCE + 1);
    assert_eq!(cut.last().unwrap(), "… and 3 more pods");
    assert_eq!(cut[..MAX_EVIDENCE], lines(MAX_EVIDENCE)[..]);
}

/// The roomy baseline every test below changes one thing of.
#[test]
fn a_roomy_node_passes() {
    let st = ClusterState { nodes: vec![gpu_node("gpu-a", ROOMY)], ..ClusterState::default() };
    let o = run(&crate::bundle::example(), &st);
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
}

/// ResourceQuota admission refuses a pod that omits a compute resource
/// (cpu, memory) the quota constrains; an extended resource the pod does
/// not request is no such refusal.
#[test]
fn a_quota_on_cpu_or_memory_requires_the_pod_to_set_it() {
    let l = crate::bundle::example();
    // Neither the example's serving container nor the file verifier
    // sidecar bundlegate renders sets a cpu limit.
    let cpu_quota = || with_quota(quota(&[("limits.cpu", "64")], &[("limits.cpu", "0")]));
    let o = run(&l, &cpu_quota());
    assert_eq!(codes(&o), ["BG202"], "{}", text(&o));
    let both = "constrains limits.cpu but the serving container and the file verifier sidecar set no limit for cpu";
    assert!(text(&o).contains(both), "{}", text(&o));
    // Each container is judged, not the pod's sum: the serving container's
    // limit does not cover the sidecar.
    let cpu_limit = crate::manifests::bundle_edit(|v| {
        v["spec"]["serving"]["resources"]["limits"]["cpu"] = "4".into();
    })
    .unwrap();
    let o = run(&cpu_limit, &cpu_quota());
    assert!(text(&o).contains("but the file verifier sidecar sets no limit for cpu"), "{}", text(&o));
    // A request left out defaults to the limit: a requests.cpu quota is met.
    let o = run(&l, &with_quota(quota(&[("requests.cpu", "64")], &[("requests.cpu", "0")])));
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
    // It sets a memory limit: room is the only question, and there is room.
    let o = run(&l, &with_quota(quota(&[("limits.memory", "640Gi")], &[("limits.memory", "0")])));
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
    let no_memory_limit = crate::manifests::bundle_edit(|v| {
        v["spec"]["serving"]["resources"]["limits"].as_mapping_mut().unwrap().remove("memory");
    })
    .unwrap();
    let o = run(&no_memory_limit, &with_quota(quota(&[("limits.memory", "640Gi")], &[("limits.memory", "0")])));
    assert_says(&o, "constrains limits.memory but the serving container sets no limit for memory");
    // An extended resource it does not request: admitted.
    // (Even one already over its hard limit: the pod adds nothing to it.)
    let o = run(&l, &with_quota(quota(&[("requests.example.com/fpga", "4")], &[("requests.example.com/fpga", "5")])));
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
}

/// A node's pod slots count the pods already on it.
#[test]
fn a_node_full_of_pods_takes_no_new_one() {
    let mut alloc = ROOMY.to_vec();
    alloc.retain(|(k, _)| *k != "pods");
    alloc.push(("pods", "2"));
    let st = ClusterState {
        nodes: vec![gpu_node("gpu-a", &alloc)],
        pods: vec![pod("a", "other", "gpu-a", &[("cpu", "100m")]), pod("b", "other", "gpu-a", &[("cpu", "100m")])],
        ..ClusterState::default()
    };
    let o = run(&crate::bundle::example(), &st);
    // Pod slots are not a resource with a free amount: the general headline.
    let headline = "the new pod will stay Pending: only room for 0 of 1 new pod(s) (Insufficient pods)";
    assert_eq!(o.diagnostics[0].message, headline, "{}", text(&o));
    // One slot left: it fits.
    let mut st = st;
    st.pods.pop();
    let o = run(&crate::bundle::example(), &st);
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
}

/// A terminating pod still holds its node's resources; the evidence names
/// what it holds, not what it requests at zero.
#[test]
fn a_terminating_pod_is_named_with_what_it_still_holds() {
    let mut old = pod("old", "other", "gpu-a", &[("cpu", "0"), ("nvidia.com/gpu", "1")]);
    old.terminating = true;
    let st = ClusterState {
        nodes: vec![gpu_node("gpu-a", &[("cpu", "16"), ("memory", "64Gi"), ("nvidia.com/gpu", "1"), ("pods", "110")])],
        pods: vec![old],
        ..ClusterState::default()
    };
    let o = run(&crate::bundle::example(), &st);
    let t = text(&o);
    assert!(t.contains("ai-lab/old (terminating: deletionTimestamp set, still holds 1 nvidia.com/gpu)"), "{t}");
}

/// Room is "used + new ≤ hard": exactly full is admitted.
#[test]
fn a_quota_filled_exactly_admits_the_pod() {
    let l = crate::bundle::example();
    let o = run(&l, &with_quota(quota(&[("pods", "2")], &[("pods", "1")])));
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
    let o = run(&l, &with_quota(quota(&[("pods", "1")], &[("pods", "1")])));
    assert_eq!(codes(&o), ["BG202"], "{}", text(&o));
    assert_says(&o, "quota ai-lab/q: pods hard 1, used 1, the 1 new pod(s) need 1 more (headroom 0)");
}

/// Which quotas select the new pod (no deadline, no priority class, no
/// cross-namespace affinity, not BestEffort while it requests anything):
/// a full quota blocks it exactly when its scopes select it.
#[test]
fn a_quota_counts_only_where_its_scopes_select_the_pod() {
    let l = crate::bundle::example();
    let full = |scopes: &[&str], selector: &[(&str, &str)]| {
        let mut q = quota(&[("pods", "1")], &[("pods", "1")]);
        q.scopes = scopes.iter().map(|s| s.to_string()).collect();
        q.scope_selector = selector
            .iter()
            .map(|(k, op)| Requirement { key: k.to_string(), operator: op.to_string(), values: vec!["high".into()] })
            .collect();
        codes(&run(&l, &with_quota(q))) == ["BG202"]
    };
    assert!(full(&[], &[]));
    assert!(full(&["NotTerminating"], &[]));
    assert!(full(&["NotBestEffort"], &[]));
    assert!(full(&["NotTerminating", "NotBestEffort"], &[]));
    assert!(!full(&["Terminating"], &[]));
    assert!(!full(&["BestEffort"], &[]));
    assert!(!full(&["CrossNamespacePodAffinity"], &[]));
    assert!(!full(&["PriorityClass"], &[]));
    assert!(!full(&["NotTerminating", "BestEffort"], &[]));
    assert!(!full(&["VolumeAttributesClass"], &[]));
    assert!(full(&[], &[("PriorityClass", "NotIn")]));
    assert!(full(&[], &[("PriorityClass", "DoesNotExist")]));
    assert!(!full(&[], &[("PriorityClass", "In")]));
    assert!(!full(&[], &[("PriorityClass", "Exists")]));
    assert!(full(&[], &[("NotTerminating", "Exists")]));
    assert!(!full(&[], &[("Terminating", "Exists")]));
    assert!(!full(&["NotTerminating"], &[("PriorityClass", "In")]));
}

/// BestEffort is a pod whose containers request and limit nothing: one that
/// sets requests alone (or limits alone) is NotBestEffort.
#[test]
fn requests_alone_make_a_pod_not_best_effort() {
    let full = |l: &Loaded, scope: &str| {
        let mut q = quota(&[("pods", "1")], &[("pods", "1")]);
        q.scopes = vec![scope.into()];
        codes(&run(l, &with_quota(q))) == ["BG202"]
    };
    for resources in ["{requests: {cpu: '2', memory: 8Gi}}", "{limits: {cpu: '2', memory: 8Gi}}"] {
        let l = serving(&[("verifyOnStart", "off"), ("resources", resources)]);
        assert!(full(&l, "NotBestEffort"), "{resources}");
        assert!(!full(&l, "BestEffort"), "{resources}");
    }
    // Neither: BestEffort, which only a BestEffort quota selects.
    let l = serving(&[("verifyOnStart", "off"), ("resources", "{}")]);
    assert!(full(&l, "BestEffort"));
    assert!(!full(&l, "NotBestEffort"));
}

fn node_with(name: &str, f: impl FnOnce(&mut Node)) -> Node {
    let mut n = gpu_node(name, ROOMY);
    f(&mut n);
    n
}

fn eligible_nodes(nodes: Vec<Node>) -> (Vec<String>, String) {
    let st = ClusterState { nodes, ..ClusterState::default() };
    let o = run(&crate::bundle::example(), &st);
    let names = o.table.rows.iter().filter(|r| r[1] == "yes").map(|r| r[0].clone()).collect();
    (names, text(&o))
}

/// kube-scheduler's node filters: a cordoned node only for a pod that
/// tolerates `unschedulable`; NoSchedule and NoExecute taints exclude, a
/// PreferNoSchedule one does not.
#[test]
fn cordons_and_taints_exclude_as_the_scheduler_does() {
    let taint = |effect: &str| Taint { key: "team".into(), value: Some("infra".into()), effect: effect.into() };
    let (names, t) = eligible_nodes(vec![
        node_with("cordoned", |n| n.unschedulable = true),
        node_with("no-schedule", |n| n.taints.push(taint("NoSchedule"))),
        node_with("no-execute", |n| n.taints.push(taint("NoExecute"))),
        node_with("prefer", |n| n.taints.push(taint("PreferNoSchedule"))),
    ]);
    assert_eq!(names, ["prefer"], "{t}");
    // Every pod tolerates not-ready and unreachable NoExecute taints (the
    // DefaultTolerationSeconds admission plugin adds them); their
    // NoSchedule twins still exclude.
    let lifecycle = |key: &str, effect: &str| Taint { key: key.into(), value: None, effect: effect.into() };
    let (names, t) = eligible_nodes(vec![
        node_with("not-ready", |n| n.taints.push(lifecycle("node.kubernetes.io/not-ready", "NoExecute"))),
        node_with("unreachable", |n| n.taints.push(lifecycle("node.kubernetes.io/unreachable", "NoExecute"))),
        node_with("not-ready-new", |n| n.taints.push(lifecycle("node.kubernetes.io/not-ready", "NoSchedule"))),
    ]);
    assert_eq!(names, ["not-ready", "unreachable"], "{t}");
    let tolerant = crate::manifests::bundle_edit(|v| {
        let t =
            serde_yaml_ng::from_str("{key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}")
                .unwrap();
        v["spec"]["serving"]["tolerations"].as_sequence_mut().unwrap().push(t);
    })
    .unwrap();
    let st = ClusterState { nodes: vec![node_with("cordoned", |n| n.unschedulable = true)], ..ClusterState::default() };
    let o = run(&tolerant, &st);
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
}

/// A node both tainted and unlabelled counts under the taint, and a
/// cordoned one under the cordon: the scheduler reports each node under the
/// first of its filters that rejects it (NodeUnschedulable, then
/// TaintToleration, then NodeAffinity), so the counts read the same.
#[test]
fn each_node_counts_under_the_schedulers_first_failing_filter() {
    let taint = Taint { key: "team".into(), value: Some("infra".into()), effect: "NoSchedule".into() };
    let both = node_with("both", |n| {
        n.taints.push(taint.clone());
        n.labels.clear();
    });
    let all = node_with("all", |n| {
        n.taints.push(taint.clone());
        n.labels.clear();
        n.unschedulable = true;
    });
    let (names, t) = eligible_nodes(vec![both, all]);
    assert!(names.is_empty(), "{t}");
    assert!(
        t.contains("0/2 nodes are available: 1 unschedulable (cordoned), 1 untolerated taint team=infra:NoSchedule"),
        "{t}"
    );
}

/// The nodeSelector as the scheduler reads it: the label with exactly that
/// value; another value or no label excludes the node, each said so.
#[test]
fn the_node_selector_needs_the_label_with_its_value() {
    let nodes = vec![
        node_with("matching", |_| {}),
        node_with("other-value", |n| {
            n.labels.insert("nvidia.com/gpu.present".into(), "false".into());
        }),
        node_with("unlabelled", |n| n.labels.clear()),
    ];
    let o = run(&crate::bundle::example(), &ClusterState { nodes, ..ClusterState::default() });
    let rows: Vec<(&str, &str)> = o.table.rows.iter().map(|r| (r[0].as_str(), r[1].as_str())).collect();
    assert_eq!(
        rows,
        [
            ("matching", "yes"),
            ("other-value", "no: nodeSelector nvidia.com/gpu.present=true (node has nvidia.com/gpu.present=false)"),
            ("unlabelled", "no: nodeSelector nvidia.com/gpu.present=true (label absent)"),
        ]
    );
}

/// The scheduler's summary counts the nodes a new pod fits on.
#[test]
fn the_scheduler_line_counts_the_nodes_with_room() {
    use super::scheduling::{scheduler_line, NodeEval};
    let eval = |idx, fits, short: &[&str]| NodeEval {
        idx,
        excluded: vec![],
        fits,
        short: short.iter().map(|k| (k.to_string(), 1000, 1000, 1000)).collect(),
        short_first: vec![],
    };
    let tainted = NodeEval { excluded: vec!["untolerated taint a=b:NoSchedule".into()], ..eval(2, 0, &[]) };
    let selector = NodeEval { excluded: vec!["nodeSelector x=y (label absent)".into()], ..eval(3, 0, &[]) };
    assert_eq!(
        scheduler_line(&[eval(0, 2, &[]), eval(1, 0, &["nvidia.com/gpu", "cpu"]), tainted, selector]),
        "1/4 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu, 1 didn't match Pod's node selector, 1 untolerated taint a=b:NoSchedule"
    );
    // Out of a volume's reach and short of a GPU: the scheduler's resource
    // filter runs before its volume filter, so the node counts as short.
    let short_and_pv = NodeEval {
        excluded: vec!["volume pv-1 of claim model cannot attach here (PV node affinity)".into()],
        short_first: vec!["nvidia.com/gpu".into()],
        ..eval(4, 0, &[])
    };
    let pv_only = NodeEval { short_first: vec![], ..short_and_pv.clone() };
    assert_eq!(
        scheduler_line(&[short_and_pv, pv_only]),
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 volume pv-1 of claim model cannot attach here (PV node affinity)"
    );
}

/// A resource the node does not list is short with no percentage (there is
/// nothing to divide by), and the line says what the pod needs.
#[test]
fn a_resource_the_node_lacks_is_named_without_a_percentage() {
    let no_gpu = gpu_node("gpu-a", &[("cpu", "16"), ("memory", "64Gi"), ("pods", "110")]);
    let full_cpu = gpu_node("gpu-b", &[("cpu", "2"), ("memory", "64Gi"), ("nvidia.com/gpu", "1"), ("pods", "110")]);
    let st = ClusterState {
        nodes: vec![no_gpu, full_cpu],
        pods: vec![pod("x", "other", "gpu-b", &[("cpu", "1")])],
        ..ClusterState::default()
    };
    let o = run(&crate::bundle::example(), &st);
    let t = text(&o);
    assert!(t.contains("gpu-a: nvidia.com/gpu requested 0/0, needs 1 more"), "{t}");
    // Two nodes, two different shortages: the general headline names both.
    let headline = "the new pod will stay Pending: only room for 0 of 1 new pod(s) (Insufficient cpu, Insufficient nvidia.com/gpu)";
    assert_eq!(o.diagnostics[0].message, headline, "{t}");
    assert!(t.contains("gpu-b: cpu requested 1/2 (50%), needs 2.1 more"), "{t}");
}

/// The example with `spec.serving.<field>` set to each YAML value given.
fn serving(fields: &[(&str, &str)]) -> Loaded {
    crate::manifests::bundle_edit(|v| {
        for (field, yaml) in fields {
            v["spec"]["serving"][*field] = serde_yaml_ng::from_str(yaml).unwrap();
        }
    })
    .unwrap()
}

/// The example with `maxSurge: 0, maxUnavailable: 1`: an old pod goes
/// before its replacement is created.
fn replacing() -> Loaded {
    serving(&[("rollout", "{maxSurge: 0, maxUnavailable: 1}")])
}

/// A `model-cache` volume; `MODE` is its access mode.
const CACHE: &str = "[{name: model-cache, claimName: model-cache, accessMode: MODE, mountPath: /cache}]";

/// That volume's claim in the cluster: in namespace `ns`, bound to `pv`.
fn cache_claim(ns: &str, mode: &str, pv: Option<&str>) -> Pvc {
    Pvc {
        namespace: ns.into(),
        name: "model-cache".into(),
        access_modes: vec![mode.into()],
        volume_name: pv.map(String::from),
        phase: Some("Bound".into()),
    }
}

fn capacity_after_freeing(o: &Outcome) -> u64 {
    o.data["newPodCapacityAfterFreeing"].as_u64().expect("a count")
}

/// A replacement counts the room the removed old pod leaves, and removes
/// first the old pod that sits where the new one can go: the one on a node
/// the new pod cannot use frees nothing it can use.
#[test]
fn a_replacement_frees_the_old_pod_on_an_eligible_node_first() {
    let one_gpu = [("cpu", "16"), ("memory", "64Gi"), ("nvidia.com/gpu", "1"), ("pods", "110")];
    let cpu_node = Node { name: "cpu-a".into(), allocatable: quantities(ROOMY), ..Node::default() };
    let gpu = [("cpu", "2"), ("nvidia.com/gpu", "1")];
    // Two pods of the release (one left over), the one on the CPU node listed first.
    let st = ClusterState {
        nodes: vec![cpu_node.clone(), gpu_node("gpu-a", &one_gpu)],
        pods: vec![pod("old-cpu", "llm-scratch", "cpu-a", &gpu), pod("old-gpu", "llm-scratch", "gpu-a", &gpu)],
        ..ClusterState::default()
    };
    let o = run(&replacing(), &st);
    assert_eq!((codes(&o), capacity_after_freeing(&o)), (vec![], 1), "{}", text(&o));
    // The GPU held by another service: removing the old pod frees none of it.
    let st = ClusterState {
        nodes: vec![cpu_node, gpu_node("gpu-a", &one_gpu)],
        pods: vec![pod("old-cpu", "llm-scratch", "cpu-a", &gpu), pod("other", "other", "gpu-a", &gpu)],
        ..ClusterState::default()
    };
    let o = run(&replacing(), &st);
    assert_eq!((codes(&o), capacity_after_freeing(&o)), (vec!["BG201"], 0), "{}", text(&o));
    assert_eq!(o.diagnostics[0].message, "the new pod will stay Pending: 0/1 nodes have a free nvidia.com/gpu");
    // A replacement is not the surge deadlock: no "never resolves itself".
    assert!(!text(&o).contains("maxUnavailable resolves to 0"), "{}", text(&o));
}

fn rollout(replicas: u32, surge_unavailable: &str) -> Loaded {
    serving(&[("replicas", &replicas.to_string()), ("rollout", surge_unavailable)])
}

/// (code, severity) of each finding.
fn findings(o: &Outcome) -> Vec<(&'static str, String)> {
    o.diagnostics.iter().map(|d| (d.code.as_str(), format!("{:?}", d.severity))).collect()
}

/// A surge pod that does not fit is a stall (error) unless maxUnavailable
/// lets old pods go first and that frees room (a warning: it moves, with
/// fewer replicas meanwhile); a surge that fits is no finding.
#[test]
fn a_surge_waits_for_old_pods_only_when_they_may_go_and_that_frees_room() {
    let gpus = |n: &'static str| [("cpu", "16"), ("memory", "64Gi"), ("nvidia.com/gpu", n), ("pods", "110")];
    let gpu = [("cpu", "2"), ("nvidia.com/gpu", "1")];
    let error = || vec![("BG201", "Error".to_string())];
    // One GPU, held by the old pod; maxUnavailable 1: it goes, the new one fits.
    let held = ClusterState {
        nodes: vec![gpu_node("gpu-a", &gpus("1"))],
        pods: vec![pod("old", "llm-scratch", "gpu-a", &gpu)],
        ..ClusterState::default()
    };
    let o = run(&rollout(1, "{maxSurge: 1, maxUnavailable: 1}"), &held);
    assert_eq!(findings(&o), [("BG201", "Warning".to_string())], "{}", text(&o));
    // maxUnavailable 0: the old pod never goes first, the rollout stalls for good.
    let o = run(&rollout(1, "{maxSurge: 1, maxUnavailable: 0}"), &held);
    assert_eq!(findings(&o), error(), "{}", text(&o));
    assert!(text(&o).contains("maxUnavailable resolves to 0"), "{}", text(&o));
    // The GPU held by another service: the old pod going frees nothing.
    let other = ClusterState {
        nodes: vec![
            gpu_node("gpu-a", &gpus("1")),
            Node { name: "cpu-a".into(), allocatable: quantities(ROOMY), ..Node::default() },
        ],
        pods: vec![pod("old", "llm-scratch", "cpu-a", &gpu), pod("x", "other", "gpu-a", &gpu)],
        ..ClusterState::default()
    };
    let o = run(&rollout(1, "{maxSurge: 1, maxUnavailable: 1}"), &other);
    assert_eq!(findings(&o), error(), "{}", text(&o));
    // Stuck, but not for want of maxUnavailable: that line is not said.
    assert!(!text(&o).contains("maxUnavailable resolves to 0"), "{}", text(&o));
    // Two GPUs, one held by the old pod: the surge pod fits beside it.
    let fits = ClusterState {
        nodes: vec![gpu_node("gpu-a", &gpus("2"))],
        pods: vec![pod("old", "llm-scratch", "gpu-a", &gpu)],
        ..ClusterState::default()
    };
    let o = run(&rollout(1, "{maxSurge: 1, maxUnavailable: 1}"), &fits);
    assert_eq!(findings(&o), [], "{}", text(&o));
    // Two replicas surging two at once with room for one, maxUnavailable 0:
    // half the surge fits, the rest stalls.
    let o = run(&rollout(2, "{maxSurge: 2, maxUnavailable: 0}"), &fits);
    assert_eq!(findings(&o), error(), "{}", text(&o));
}

/// The removed old pod gives back its pod slot too.
#[test]
fn a_replacement_frees_the_old_pods_slot() {
    let one_slot = [("cpu", "16"), ("memory", "64Gi"), ("nvidia.com/gpu", "4"), ("pods", "1")];
    let st = ClusterState {
        nodes: vec![gpu_node("gpu-a", &one_slot)],
        pods: vec![pod("old", "llm-scratch", "gpu-a", &[("cpu", "2")])],
        ..ClusterState::default()
    };
    let o = run(&replacing(), &st);
    assert_eq!((codes(&o), capacity_after_freeing(&o)), (vec![], 1), "{}", text(&o));
    // Two replicas, two old pods on two nodes, both replaced at once: room for two.
    let two = rollout(2, "{maxSurge: 0, maxUnavailable: 2}");
    let st = ClusterState {
        nodes: vec![gpu_node("gpu-a", &one_slot), gpu_node("gpu-b", &one_slot)],
        pods: vec![
            pod("old-a", "llm-scratch", "gpu-a", &[("cpu", "2")]),
            pod("old-b", "llm-scratch", "gpu-b", &[("cpu", "2")]),
        ],
        ..ClusterState::default()
    };
    let o = run(&two, &st);
    assert_eq!((codes(&o), capacity_after_freeing(&o)), (vec![], 2), "{}", text(&o));
}

/// One eligible node short of cpu alone: the headline reads like
/// kube-scheduler's event, with the node's request level.
#[test]
fn one_node_short_of_cpu_is_named_with_its_request_level() {
    let st = ClusterState {
        nodes: vec![gpu_node("gpu-a", &[("cpu", "4"), ("memory", "64Gi"), ("nvidia.com/gpu", "2"), ("pods", "110")])],
        pods: vec![pod("x", "other", "gpu-a", &[("cpu", "3")])],
        ..ClusterState::default()
    };
    let o = run(&crate::bundle::example(), &st);
    assert_eq!(
        o.diagnostics[0].message,
        "the new pod will stay Pending: Insufficient cpu: gpu-a requests at 75% (3/4 cores)"
    );
}

/// The nodes table: a column per resource the pod requests (none for a
/// zero request), the 25 eligible nodes with most room first, 10 excluded
/// ones, and a row counting the rest, as wide as the others.
#[test]
fn the_nodes_table_shows_the_roomiest_and_counts_the_rest() {
    let zero_fpga = crate::manifests::bundle_edit(|v| {
        v["spec"]["serving"]["resources"]["requests"]["example.com/fpga"] = "0".into();
    })
    .unwrap();
    let mut nodes: Vec<Node> = (0..30)
        .map(|i| {
            let gpus = if i == 7 { "4" } else { "1" };
            gpu_node(
                &format!("gpu-{i:02}"),
                &[("cpu", "16"), ("memory", "64Gi"), ("nvidia.com/gpu", gpus), ("pods", "110")],
            )
        })
        .collect();
    nodes.extend((0..12).map(|i| Node {
        name: format!("cpu-{i:02}"),
        allocatable: quantities(ROOMY),
        ..Node::default()
    }));
    let st = ClusterState { nodes, ..ClusterState::default() };
    let o = run(&zero_fpga, &st);
    assert_eq!(
        o.table.columns,
        ["node", "eligible", "free cpu", "free memory", "free nvidia.com/gpu", "new pods that fit"],
        "no column for a zero request"
    );
    let rows = &o.table.rows;
    assert_eq!(rows.len(), 25 + 10 + 1);
    assert_eq!(rows[0][0], "gpu-07", "the most room first");
    assert_eq!(rows[0][5], "4");
    assert_eq!(rows[1][0], "gpu-00", "then by name");
    assert!(rows[25][1].starts_with("no: nodeSelector"), "{:?}", rows[25]);
    assert_eq!(rows[35], ["… 7 more", "", "", "", "", ""]);
    // Exactly as many nodes as shown: no count row.
    let st = ClusterState { nodes: st.nodes[..3].to_vec(), ..ClusterState::default() };
    assert_eq!(run(&zero_fpga, &st).table.rows.len(), 3);
}

/// The claim's bound PV restricts nodes (VolumeBinding): the PV the claim
/// in the bundle's namespace names, and only when it has node affinity.
#[test]
fn a_bound_volumes_node_affinity_restricts_the_nodes() {
    let with_volume = serving(&[("volumes", &CACHE.replace("MODE", "ReadWriteMany"))]);
    let claim = |ns: &str, pv: &str| cache_claim(ns, "ReadWriteMany", Some(pv));
    let on_b = Pv {
        name: "pv-b".into(),
        node_affinity: vec![SelectorTerm {
            requirements: vec![Requirement {
                key: "metadata.name".into(),
                operator: "In".into(),
                values: vec!["gpu-b".into()],
            }],
        }],
    };
    let anywhere = Pv { name: "pv-any".into(), node_affinity: vec![] };
    let eligible = |pvcs: Vec<Pvc>| {
        let st = ClusterState {
            nodes: vec![gpu_node("gpu-a", ROOMY), gpu_node("gpu-b", ROOMY)],
            pvcs,
            pvs: vec![on_b.clone(), anywhere.clone()],
            ..ClusterState::default()
        };
        let o = run(&with_volume, &st);
        let rows: Vec<(String, String)> = o.table.rows.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
        rows
    };
    let yes = |n: &str| (n.to_string(), "yes".to_string());
    assert_eq!(
        eligible(vec![claim("ai-lab", "pv-b")]),
        [
            yes("gpu-b"),
            ("gpu-a".into(), "no: volume pv-b of claim model-cache cannot attach here (PV node affinity)".into())
        ]
    );
    // No node affinity: any node.
    assert_eq!(eligible(vec![claim("ai-lab", "pv-any")]), [yes("gpu-a"), yes("gpu-b")]);
    // The same claim name in another namespace is not the bundle's claim.
    assert_eq!(eligible(vec![claim("other", "pv-b")]), [yes("gpu-a"), yes("gpu-b")]);
}

/// A claim bound to a PV the state does not hold (a snapshot without it, a
/// live read refused): where the pod can run is unknown, so preflight says
/// the state is incomplete (BG207), never PASS on nodes it could not judge.
#[test]
fn a_bound_volume_whose_pv_was_not_read_makes_the_answer_unknown() {
    let with_volume = serving(&[("volumes", &CACHE.replace("MODE", "ReadWriteMany"))]);
    let st = |pvs: Vec<Pv>| ClusterState {
        nodes: vec![gpu_node("gpu-a", ROOMY)],
        pvcs: vec![cache_claim("ai-lab", "ReadWriteMany", Some("pv-b"))],
        pvs,
        ..ClusterState::default()
    };
    let o = run(&with_volume, &st(vec![]));
    assert_eq!(codes(&o), ["BG207"], "{}", text(&o));
    assert!(
        text(&o).contains("persistentvolume pv-b (bound to claim ai-lab/model-cache): not in the cluster state"),
        "{}",
        text(&o)
    );
    // Read, it is judged: no node affinity, any node.
    let o = run(&with_volume, &st(vec![Pv { name: "pv-b".into(), node_affinity: vec![] }]));
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
    // An unbound claim names no PV: nothing is missing.
    let unbound = ClusterState { pvcs: vec![cache_claim("ai-lab", "ReadWriteMany", None)], ..st(vec![]) };
    assert!(!codes(&run(&with_volume, &unbound)).contains(&"BG207"));
}

/// A ReadWriteOncePod claim deadlocks a surge whose old pod holds it
/// (maxUnavailable 0), never a first rollout (nothing holds it); shared by
/// more than one replica it can never serve them all.
#[test]
fn a_read_write_once_pod_claim_deadlocks_only_a_surge_past_a_holder() {
    let rwop = |replicas: u32, rollout: &str| {
        let volumes = CACHE.replace("MODE", "ReadWriteOncePod");
        serving(&[("replicas", &replicas.to_string()), ("rollout", rollout), ("volumes", &volumes)])
    };
    let claim = cache_claim("ai-lab", "ReadWriteOncePod", None);
    let state = |old: usize| ClusterState {
        nodes: vec![gpu_node("gpu-a", ROOMY)],
        pods: (0..old).map(|i| pod(&format!("old-{i}"), "llm-scratch", "gpu-a", &[("cpu", "1")])).collect(),
        pvcs: vec![claim.clone()],
        ..ClusterState::default()
    };
    let surge = "{maxSurge: 1, maxUnavailable: 0}";
    assert_eq!(codes(&run(&rwop(1, surge), &state(1))), ["BG203"]);
    assert_eq!(codes(&run(&rwop(1, surge), &state(0))), Vec::<&str>::new(), "a first rollout holds nothing");
    let replace = "{maxSurge: 0, maxUnavailable: 1}";
    assert_eq!(codes(&run(&rwop(1, replace), &state(1))), Vec::<&str>::new());
    let o = run(&rwop(2, replace), &state(2));
    assert_eq!(codes(&o), ["BG203"], "{}", text(&o));
    assert!(o.diagnostics[0].message.contains("but 2 replicas share it"), "{}", text(&o));
}

/// The claim in the cluster decides the access mode, whatever the bundle
/// declares: the most restrictive it lists (ReadWriteOncePod first, then
/// ReadWriteMany, ReadWriteOnce, ReadOnlyMany); a claim that lists none
/// leaves the bundle's, and says so.
#[test]
fn the_clusters_claim_decides_the_access_mode() {
    let declared = |mode: &str| {
        serving(&[("rollout", "{maxSurge: 1, maxUnavailable: 0}"), ("volumes", &CACHE.replace("MODE", mode))])
    };
    let state = |modes: &[&str]| ClusterState {
        nodes: vec![gpu_node("gpu-a", ROOMY)],
        pods: vec![pod("old-0", "llm-scratch", "gpu-a", &[("cpu", "1")])],
        pvcs: vec![Pvc {
            access_modes: modes.iter().map(|m| m.to_string()).collect(),
            ..cache_claim("ai-lab", "ReadWriteOnce", None)
        }],
        ..ClusterState::default()
    };
    let row = |o: &Outcome| {
        let v = &o.data["volumes"][0];
        (v["accessMode"].as_str().unwrap().to_string(), v["source"].as_str().unwrap().to_string())
    };
    let o = run(&declared("ReadWriteMany"), &state(&["ReadWriteOncePod"]));
    assert_eq!(codes(&o), ["BG203"], "{}", text(&o));
    assert_eq!(
        row(&o),
        (
            "ReadWriteOncePod".into(),
            "PVC ai-lab/model-cache in the cluster has accessModes [ReadWriteOncePod]; it wins over the bundle's declared ReadWriteMany".into()
        )
    );
    for (modes, effective) in [
        (&["ReadWriteMany", "ReadWriteOncePod"][..], "ReadWriteOncePod"),
        (&["ReadWriteOnce", "ReadWriteMany"], "ReadWriteMany"),
        (&["ReadOnlyMany", "ReadWriteOnce"], "ReadWriteOnce"),
        (&["ReadOnlyMany"], "ReadOnlyMany"),
    ] {
        assert_eq!(row(&run(&declared("ReadWriteMany"), &state(modes))).0, effective, "{modes:?}");
    }
    let o = run(&declared("ReadWriteOncePod"), &state(&[]));
    assert_eq!(codes(&o), ["BG203"], "{}", text(&o));
    assert_eq!(
        row(&o),
        (
            "ReadWriteOncePod".into(),
            "PVC ai-lab/model-cache lists no access modes; using the bundle's declared ReadWriteOncePod".into()
        )
    );
    assert_eq!(codes(&run(&declared("ReadWriteMany"), &state(&[]))), Vec::<&str>::new());
}

/// A ReadWriteOnce claim with two nodes the new pod may use: Multi-Attach
/// risk, naming where the old pod holds the attachment when there is one.
#[test]
fn a_read_write_once_claim_on_two_nodes_names_the_old_pods_node() {
    let rwo = serving(&[("volumes", &CACHE.replace("MODE", "ReadWriteOnce"))]);
    let state = |old: bool| ClusterState {
        nodes: vec![gpu_node("gpu-a", ROOMY), gpu_node("gpu-b", ROOMY)],
        pods: old.then(|| pod("old", "llm-scratch", "gpu-a", &[("cpu", "1")])).into_iter().collect(),
        ..ClusterState::default()
    };
    let o = run(&rwo, &state(true));
    assert_eq!(codes(&o), ["BG204"], "{}", text(&o));
    assert!(o.diagnostics[0].evidence.iter().any(|e| e.contains("ai-lab/old on gpu-a")), "{}", text(&o));
    let o = run(&rwo, &state(false));
    assert_eq!(codes(&o), ["BG204"], "{}", text(&o));
    assert!(!o.diagnostics[0].evidence.iter().any(|e| e.contains("first rollout")), "{}", text(&o));
    // One node the new pod may use: it lands where the attachment is.
    let one = ClusterState { nodes: vec![gpu_node("gpu-a", ROOMY)], ..state(true) };
    let o = run(&rwo, &one);
    assert_eq!(codes(&o), Vec::<&str>::new(), "{}", text(&o));
}

/// Bare `cpu`/`memory` keys are requests; with no `status.used` yet, the
/// namespace's own pods are counted (running ones, not finished ones or
/// another namespace's).
#[test]
fn a_quota_without_status_counts_the_namespaces_running_pods() {
    let l = crate::bundle::example();
    let o = run(&l, &with_quota(quota(&[("cpu", "3")], &[("cpu", "2")])));
    assert_eq!(codes(&o), ["BG202"], "{}", text(&o));
    assert_says(&o, "quota ai-lab/q: cpu hard 3, used 2, the 1 new pod(s) need 2.1 more (headroom 1)");
    let mut finished = pod("done", "other", "gpu-a", &[("cpu", "10")]);
    finished.phase = Some("Succeeded".into());
    let mut elsewhere = pod("far", "other", "gpu-a", &[("cpu", "10")]);
    elsewhere.namespace = "other".into();
    let mut st = with_quota(Quota { used: None, ..quota(&[("requests.cpu", "4")], &[]) });
    st.pods = vec![pod("a", "other", "gpu-a", &[("cpu", "2")]), finished, elsewhere];
    let o = run(&l, &st);
    assert_eq!(codes(&o), ["BG202"], "{}", text(&o));
    assert_says(&o, "quota ai-lab/q: requests.cpu hard 4, used 2, the 1 new pod(s) need 2.1 more (headroom 2)");
}
