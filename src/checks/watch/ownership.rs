//! Which pods belong to this release, and which of them the Service routes
//! to: decided from the cluster's own structure, never from labels.
//!
//! Anything can carry the app's labels (a Job's pod, a hand-copied shadow
//! Deployment, another InferenceService in the namespace). The release's pods
//! are the ones whose `ownerReferences` (controller first) lead to the
//! workload the bundle renders:
//!
//! - `deployment` format: Pod → ReplicaSet → Deployment `<name>`;
//! - KServe RawDeployment: Pod → ReplicaSet → Deployment → InferenceService `<name>`;
//! - KServe Serverless: Pod → ReplicaSet → Deployment → Revision → Configuration
//!   → (Knative) Service → InferenceService `<name>`.
//!
//! What *serves* is what traffic reaches: the ready endpoints of the
//! release's Service's EndpointSlices, or for Serverless the Knative
//! Service's `status.traffic[]` per revision. Pods outside the chain are
//! neither counted nor blamed; the ones carrying the app's labels are listed
//! as "not part of this release". A pod outside the chain that the release's
//! own Service routes to cannot be judged from here: BG506.

use crate::bundle::ServingFormat;

use super::state::{ClusterView, EndpointInfo, ObjectRef, OutsidePod, OwnerRef, ServiceState};

/// The workload the bundle renders: the root of every release pod's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Root {
    pub kind: &'static str,
    pub name: String,
}

/// The kind the format renders, at the root of every release pod's chain
/// (an LLMInferenceService's pods: Pod → ReplicaSet → Deployment →
/// LLMInferenceService).
pub(crate) fn workload_kind(format: ServingFormat) -> &'static str {
    match format {
        ServingFormat::Deployment => "Deployment",
        ServingFormat::KserveModelspec | ServingFormat::KserveCustom => "InferenceService",
        ServingFormat::KserveLlm => "LLMInferenceService",
    }
}

impl Root {
    pub(crate) fn for_bundle(name: &str, kind: &'static str) -> Root {
        Root { kind, name: name.to_string() }
    }

    /// The Services that route to the release, by the names the workload
    /// gets: the Deployment format's `<name>`, KServe's `<name>-predictor`
    /// (`-predictor-default` before KServe 0.8), an LLMInferenceService's
    /// `<name>-kserve-workload-svc`.
    fn service_names(&self) -> [String; 4] {
        [
            self.name.clone(),
            format!("{}-predictor", self.name),
            format!("{}-predictor-default", self.name),
            format!("{}-kserve-workload-svc", self.name),
        ]
    }
}

/// Where a pod's chain leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chain {
    /// Owned by the release's workload; the path from the pod up (e.g.
    /// `ReplicaSet/x`, `Deployment/y`, `InferenceService/z`).
    Member(Vec<String>),
    /// Not part of this release, and why.
    Outside(String),
}

fn controller(owners: &[OwnerRef]) -> Option<&OwnerRef> {
    owners.iter().find(|o| o.controller).or(owners.first())
}

/// The ownership chain from a pod's owners up to the root. An owner object
/// that was not listed ends the chain outside (a race with its creation heals
/// on the next read); uids must agree where both are known, so the pods of
/// a deleted and recreated workload of the same name are not this one's.
pub(crate) fn chain(objects: &[ObjectRef], owners: &[OwnerRef], root: &Root, root_uid: Option<&str>) -> Chain {
    let Some(mut cur) = controller(owners) else { return Chain::Outside("no owner (a bare pod)".into()) };
    let mut path = Vec::new();
    // Serverless is six levels deep; anything deeper is not a chain we know.
    for _ in 0..8 {
        path.push(format!("{}/{}", cur.kind, cur.name));
        if cur.kind == root.kind && cur.name == root.name {
            return match (root_uid, cur.uid.as_deref()) {
                (Some(a), Some(b)) if a != b => Chain::Outside(format!(
                    "owned by an earlier {} {} (uid {b}, the live one is {a})",
                    root.kind, root.name
                )),
                _ => Chain::Member(path),
            };
        }
        let found = objects.iter().find(|o| {
            o.kind == cur.kind && o.name == cur.name && (o.uid.is_none() || cur.uid.is_none() || o.uid == cur.uid)
        });
        let Some(o) = found else {
            return Chain::Outside(format!(
                "owned by {} {}, which does not lead to {} {}",
                cur.kind, cur.name, root.kind, root.name
            ));
        };
        let Some(next) = controller(&o.owners) else {
            return Chain::Outside(format!("owned by {} {}, which has no owner", o.kind, o.name));
        };
        cur = next;
    }
    Chain::Outside("ownership chain deeper than any workload renders".into())
}

/// The release's part of the namespace: its pods (with `routed` set from
/// EndpointSlices or Knative traffic), the controllers in their chains, the
/// events about them, and the pods left outside.
pub(crate) fn release_state(view: &ClusterView, root: &Root) -> ServiceState {
    let root_uid = view.objects.iter().find(|o| o.kind == root.kind && o.name == root.name).and_then(|o| o.uid.clone());
    let names = root.service_names();
    let slices: Option<Vec<&EndpointInfo>> = view
        .endpoints
        .as_ref()
        .map(|e| e.iter().filter(|e| names.contains(&e.service)).collect())
        .filter(|v: &Vec<&EndpointInfo>| !v.is_empty());
    let traffic = view.traffic.iter().find(|t| names.contains(&t.service));
    let mut st = ServiceState {
        routing: routing_source(slices.is_some(), traffic.is_some()),
        workload_status: view.workload_status.iter().find(|w| w.kind == root.kind && w.name == root.name).cloned(),
        ..ServiceState::default()
    };
    let mut chain_objects: Vec<String> = Vec::new();
    for p in &view.pods {
        let endpoint = slices.as_ref().map(|s| s.iter().any(|e| e.pod == p.name && e.ready));
        match chain(&view.objects, &p.owners, root, root_uid.as_deref()) {
            Chain::Member(path) => {
                let mut p = p.clone();
                let revision = path.iter().find_map(|s| s.strip_prefix("Revision/")).map(String::from);
                p.routed = match (traffic, &revision) {
                    (Some(t), Some(rev)) => Some(t.percent.get(rev).copied().unwrap_or(0) > 0),
                    _ => endpoint,
                };
                p.revision = revision;
                chain_objects.extend(path.iter().cloned());
                st.pods.push(p);
            }
            Chain::Outside(why) => {
                let routed = endpoint == Some(true);
                if routed || p.labelled {
                    st.outside.push(OutsidePod { name: p.name.clone(), why, routed });
                }
            }
        }
    }
    // The controllers of the release: every Deployment/ReplicaSet in a
    // member chain, and those of the workload with no pod yet (a new
    // ReplicaSet that cannot create its pods).
    let in_release = |kind: &str, name: &str, owners: Option<&ObjectRef>| {
        chain_objects.iter().any(|c| c == &format!("{kind}/{name}"))
            || owners.is_some_and(|o| {
                matches!(
                    chain(
                        &view.objects,
                        &[OwnerRef {
                            kind: o.kind.clone(),
                            name: o.name.clone(),
                            uid: o.uid.clone(),
                            controller: true
                        }],
                        root,
                        root_uid.as_deref()
                    ),
                    Chain::Member(_)
                )
            })
    };
    let obj = |kind: &str, name: &str| view.objects.iter().find(|o| o.kind == kind && o.name == name);
    st.deployments = view
        .deployments
        .iter()
        .filter(|d| in_release("Deployment", &d.name, obj("Deployment", &d.name)))
        .cloned()
        .collect();
    st.replica_sets = view
        .replica_sets
        .iter()
        .filter(|r| in_release("ReplicaSet", &r.name, obj("ReplicaSet", &r.name)))
        .cloned()
        .collect();
    let known = |kind: &str, name: &str| match kind {
        "Pod" => st.pods.iter().any(|p| p.name == name),
        "ReplicaSet" => st.replica_sets.iter().any(|r| r.name == name),
        "Deployment" => st.deployments.iter().any(|d| d.name == name),
        _ => false,
    };
    st.events = view.events.iter().filter(|e| known(&e.kind, &e.object)).cloned().collect();
    if let Some(t) = traffic {
        st.latest_created = t.latest_created.clone();
        st.latest_ready = t.latest_ready.clone();
    }
    st.pods.sort_by(|a, b| a.name.cmp(&b.name));
    st
}

fn routing_source(slices: bool, traffic: bool) -> String {
    match (traffic, slices) {
        (true, _) => "Knative Service status.traffic[] per revision".into(),
        (false, true) => "the Service's EndpointSlices".into(),
        (false, false) => "pod readiness (no EndpointSlice of the release's Service was found)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::*;
    use super::*;

    fn owner(kind: &str, name: &str) -> OwnerRef {
        OwnerRef { kind: kind.into(), name: name.into(), uid: None, controller: true }
    }
    fn obj(kind: &str, name: &str, up: Option<(&str, &str)>) -> ObjectRef {
        ObjectRef {
            kind: kind.into(),
            name: name.into(),
            uid: None,
            owners: up.map(|(k, n)| vec![owner(k, n)]).unwrap_or_default(),
        }
    }

    #[test]
    fn serverless_chain_reaches_the_inference_service() {
        let objects = vec![
            obj("ReplicaSet", "m-predictor-00002-deployment-abc", Some(("Deployment", "m-predictor-00002-deployment"))),
            obj("Deployment", "m-predictor-00002-deployment", Some(("Revision", "m-predictor-00002"))),
            obj("Revision", "m-predictor-00002", Some(("Configuration", "m-predictor"))),
            obj("Configuration", "m-predictor", Some(("Service", "m-predictor"))),
            obj("Service", "m-predictor", Some(("InferenceService", "m"))),
            obj("InferenceService", "m", None),
        ];
        let root = Root::for_bundle("m", "InferenceService");
        assert!(
            matches!(chain(&objects, &[owner("ReplicaSet", "m-predictor-00002-deployment-abc")], &root, None), Chain::Member(p) if p.len() == 6)
        );
        // A Job's pod with the same labels is not the release's.
        assert!(matches!(chain(&objects, &[owner("Job", "m-eval")], &root, None), Chain::Outside(_)));
        assert!(matches!(chain(&objects, &[], &root, None), Chain::Outside(_)));
    }

    /// An LLMInferenceService's pods: Pod → ReplicaSet → Deployment →
    /// LLMInferenceService; an InferenceService of the same name is not it.
    #[test]
    fn an_llminferenceservice_chain_reaches_its_root() {
        let objects = vec![
            obj("ReplicaSet", "m-kserve-abc", Some(("Deployment", "m-kserve"))),
            obj("Deployment", "m-kserve", Some(("LLMInferenceService", "m"))),
            obj("LLMInferenceService", "m", None),
            obj("ReplicaSet", "m-predictor-abc", Some(("Deployment", "m-predictor"))),
            obj("Deployment", "m-predictor", Some(("InferenceService", "m"))),
        ];
        let root = Root::for_bundle("m", workload_kind(ServingFormat::KserveLlm));
        assert_eq!(root.kind, "LLMInferenceService");
        assert!(
            matches!(chain(&objects, &[owner("ReplicaSet", "m-kserve-abc")], &root, None), Chain::Member(p) if p.len() == 3)
        );
        assert!(matches!(chain(&objects, &[owner("ReplicaSet", "m-predictor-abc")], &root, None), Chain::Outside(_)));
        assert!(root.service_names().contains(&"m-kserve-workload-svc".to_string()));
        assert_eq!(workload_kind(ServingFormat::KserveCustom), "InferenceService");
        assert_eq!(workload_kind(ServingFormat::Deployment), "Deployment");
    }

    /// Kind and name must both be the root's; routing is a share above
    /// zero of the revision's traffic, or a ready endpoint; events are kept
    /// only for the release's own objects (cases cargo-mutants asked for).
    #[test]
    fn membership_needs_kind_and_name_and_routing_needs_a_share() {
        let root = Root::for_bundle("m", "Deployment");
        let objects = vec![
            obj("ReplicaSet", "copy-1", Some(("Deployment", "copy"))),
            obj("Deployment", "copy", None),
            obj("StatefulSet", "m", None),
        ];
        assert!(
            matches!(chain(&objects, &[owner("ReplicaSet", "copy-1")], &root, None), Chain::Outside(_)),
            "another Deployment is not the root"
        );
        assert!(
            matches!(chain(&objects, &[owner("StatefulSet", "m")], &root, None), Chain::Outside(_)),
            "another kind of the same name is not the root"
        );
        let pod = |name: &str, rev: &str| PodInfo {
            name: name.into(),
            owners: vec![owner("ReplicaSet", &format!("{rev}-deployment-rs"))],
            labelled: true,
            ..Default::default()
        };
        let mut view = ClusterView::default();
        for rev in ["m-predictor-00001", "m-predictor-00002"] {
            view.objects.push(obj(
                "ReplicaSet",
                &format!("{rev}-deployment-rs"),
                Some(("Deployment", &format!("{rev}-deployment"))),
            ));
            view.objects.push(obj("Deployment", &format!("{rev}-deployment"), Some(("Revision", rev))));
            view.objects.push(obj("Revision", rev, Some(("Configuration", "m-predictor"))));
        }
        view.objects.push(obj("Configuration", "m-predictor", Some(("Service", "m-predictor"))));
        view.objects.push(obj("Service", "m-predictor", Some(("InferenceService", "m"))));
        view.pods = vec![pod("old", "m-predictor-00001"), pod("new", "m-predictor-00002")];
        view.traffic = vec![KnativeTraffic {
            service: "m-predictor".into(),
            percent: [("m-predictor-00001".to_string(), 0), ("m-predictor-00002".to_string(), 100)].into(),
            ..Default::default()
        }];
        view.events = vec![
            EventInfo { kind: "Pod".into(), object: "new".into(), ..Default::default() },
            EventInfo { kind: "Pod".into(), object: "someone-else".into(), ..Default::default() },
        ];
        let st = release_state(&view, &Root::for_bundle("m", "InferenceService"));
        let routed: Vec<(String, Option<bool>)> = st.pods.iter().map(|p| (p.name.clone(), p.routed)).collect();
        assert_eq!(routed, [("new".to_string(), Some(true)), ("old".to_string(), Some(false))]);
        assert_eq!(st.pods[0].revision.as_deref(), Some("m-predictor-00002"));
        assert!(st.routing.contains("status.traffic"), "{}", st.routing);
        assert_eq!(st.events.len(), 1, "only the release's pod's event");
        // With EndpointSlices instead: a ready endpoint of the release's Service routes, another Service's does not.
        let mut raw =
            ClusterView { objects: vec![obj("ReplicaSet", "m-rs", Some(("Deployment", "m")))], ..Default::default() };
        raw.pods = vec![
            PodInfo { name: "a".into(), owners: vec![owner("ReplicaSet", "m-rs")], ..Default::default() },
            PodInfo { name: "b".into(), owners: vec![owner("ReplicaSet", "m-rs")], ..Default::default() },
        ];
        raw.endpoints = Some(vec![
            EndpointInfo { service: "m".into(), pod: "a".into(), ready: true },
            EndpointInfo { service: "other".into(), pod: "b".into(), ready: true },
        ]);
        let st = release_state(&raw, &Root::for_bundle("m", "Deployment"));
        assert_eq!(st.pods.iter().map(|p| p.routed).collect::<Vec<_>>(), [Some(true), Some(false)]);
        assert!(st.routing.contains("EndpointSlices"));
    }

    /// The release's controllers and events are chosen by ownership: a
    /// copy's Deployment and ReplicaSet with look-alike names stay out, a
    /// new ReplicaSet with no pod yet is in, and a ReplicaSet of an earlier
    /// Deployment of the same name (another uid) is not this release's.
    #[test]
    fn controllers_and_events_are_the_releases_by_ownership() {
        let with_uid = |mut o: ObjectRef, uid: &str| {
            o.uid = Some(uid.into());
            o
        };
        let owned_by_m = |name: &str, uid: &str| ObjectRef {
            owners: vec![OwnerRef { uid: Some(uid.into()), ..owner("Deployment", "m") }],
            ..obj("ReplicaSet", name, None)
        };
        let mut view = ClusterView {
            objects: vec![
                with_uid(obj("Deployment", "copy", None), "u-copy"),
                with_uid(obj("Deployment", "m", None), "u-m"),
                owned_by_m("m-1", "u-m"),
                owned_by_m("m-2", "u-m"),
                owned_by_m("m-old", "u-gone"),
                obj("ReplicaSet", "copy-1", Some(("Deployment", "copy"))),
            ],
            ..Default::default()
        };
        view.deployments = ["copy", "m"].map(|n| DeploymentInfo { name: n.into(), ..Default::default() }).to_vec();
        view.replica_sets =
            ["copy-1", "m-1", "m-2", "m-old"].map(|n| ReplicaSetInfo { name: n.into(), ..Default::default() }).to_vec();
        view.pods = vec![
            PodInfo { name: "p1".into(), owners: vec![owner("ReplicaSet", "m-1")], ..Default::default() },
            PodInfo {
                name: "c1".into(),
                owners: vec![owner("ReplicaSet", "copy-1")],
                labelled: true,
                ..Default::default()
            },
        ];
        let ev =
            |kind: &str, object: &str| EventInfo { kind: kind.into(), object: object.into(), ..Default::default() };
        view.events = vec![
            ev("Deployment", "m"),
            ev("Deployment", "copy"),
            ev("ReplicaSet", "m-2"),
            ev("ReplicaSet", "copy-1"),
            ev("Pod", "p1"),
            ev("Pod", "c1"),
        ];
        let st = release_state(&view, &Root::for_bundle("m", "Deployment"));
        let names = |v: Vec<&String>| v.into_iter().cloned().collect::<Vec<_>>();
        assert_eq!(names(st.pods.iter().map(|p| &p.name).collect()), ["p1"]);
        assert_eq!(names(st.deployments.iter().map(|d| &d.name).collect()), ["m"]);
        assert_eq!(names(st.replica_sets.iter().map(|r| &r.name).collect()), ["m-1", "m-2"]);
        assert_eq!(
            st.events.iter().map(|e| format!("{}/{}", e.kind, e.object)).collect::<Vec<_>>(),
            ["Deployment/m", "ReplicaSet/m-2", "Pod/p1"]
        );
        assert_eq!(st.outside.iter().map(|o| (o.name.as_str(), o.routed)).collect::<Vec<_>>(), [("c1", false)]);
    }

    #[test]
    fn a_recreated_workload_of_the_same_name_is_another_one() {
        let mut rs = obj("ReplicaSet", "m-1", None);
        rs.owners = vec![OwnerRef { uid: Some("old".into()), ..owner("Deployment", "m") }];
        let root = Root::for_bundle("m", "Deployment");
        assert!(matches!(chain(&[rs.clone()], &[owner("ReplicaSet", "m-1")], &root, Some("new")), Chain::Outside(_)));
        assert!(matches!(chain(&[rs.clone()], &[owner("ReplicaSet", "m-1")], &root, Some("old")), Chain::Member(_)));
        // A uid known on one side only does not break the chain (a listing
        // that left it out): kind and name decide there.
        let by_uid = OwnerRef { uid: Some("rs-uid".into()), ..owner("ReplicaSet", "m-1") };
        assert!(matches!(chain(&[rs.clone()], std::slice::from_ref(&by_uid), &root, Some("old")), Chain::Member(_)));
        let listed = ObjectRef { uid: Some("rs-uid".into()), ..rs.clone() };
        assert!(matches!(chain(&[listed], &[by_uid], &root, Some("old")), Chain::Member(_)));
        let other = ObjectRef { uid: Some("another".into()), ..rs };
        let by_uid = OwnerRef { uid: Some("rs-uid".into()), ..owner("ReplicaSet", "m-1") };
        assert!(matches!(chain(&[other], &[by_uid], &root, Some("old")), Chain::Outside(_)));
    }
}
