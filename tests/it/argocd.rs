//! Tests for argocd (owned by the argocd work).
