//! Rollout truth checks (issue #7): pure functions over Argo/Deployment/Pod state. OWNED BY THE WATCH WORK.
