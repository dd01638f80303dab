//! Tests for watch (owned by the watch work).
