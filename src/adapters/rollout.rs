//! Kubernetes reads for watch (issue #7): Argo CD Application, Deployments, ReplicaSets, Pods, Events. OWNED BY THE WATCH WORK.
