//! The audit at scale: which shard owns which bundle (`shard`), the plan
//! resolved once and the audit's own steps (`steps`), the serving pass
//! judged (`serving`), and putting the shards' reports back together
//! (`merge`). What one bundle's audit finds is verify's judgment
//! (`checks::verify`, its drift in `drift`).

pub mod merge;
pub(crate) mod serving;
pub mod shard;
pub(crate) mod steps;
