//! The audit at scale: which shard owns which bundle (`shard`), and putting
//! the shards' reports back together (`merge`). What one bundle's audit
//! finds is verify's judgment (`checks::verify`, its drift in `drift`).

pub mod merge;
pub mod shard;
