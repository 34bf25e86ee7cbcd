//! The pure partition plan shared by the real kernel and the simulator's job model.
//!
//! Feature IDs are assigned to PS shards by a stable hash (SplitMix64 finaliser), never by
//! insertion order, so the same IDs map to the same PS on every run and every machine. A
//! batch's lookup plan turns its categorical IDs into per-PS requests: **packed** (PICASSO)
//! sends one request per PS carrying every field's IDs; **unpacked** sends one request per
//! (field, PS) pair, as a naive per-table lookup would. IDs are deduplicated per batch either
//! way. Nothing here does I/O, reads a clock or spawns a thread.

use serde::{Deserialize, Serialize};

/// A feature ID: the field number in the top 16 bits, the (hashed) value in the low 48.
pub type FeatureId = u64;

const VALUE_BITS: u32 = 48;
const VALUE_MASK: u64 = (1 << VALUE_BITS) - 1;

/// Builds the feature ID of `value` in categorical field `field` (0-based).
pub fn feature_id(field: usize, value: u64) -> FeatureId {
    ((field as u64 + 1) << VALUE_BITS) | (value & VALUE_MASK)
}

/// The categorical field a feature ID belongs to.
pub fn field_of(id: FeatureId) -> usize {
    ((id >> VALUE_BITS) as usize).saturating_sub(1)
}

/// SplitMix64 finaliser: a cheap, well-mixed, platform-independent 64-bit hash.
pub fn stable_hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The PS shard (0-based) that owns `id` among `num_ps` shards.
pub fn ps_of(id: FeatureId, num_ps: usize) -> usize {
    (stable_hash(id) % num_ps.max(1) as u64) as usize
}

/// The half-open range of the flattened dense parameter vector (length `n`) owned by PS `ps`.
pub fn dense_range(ps: usize, num_ps: usize, n: usize) -> std::ops::Range<usize> {
    let num_ps = num_ps.max(1);
    (ps * n / num_ps)..((ps + 1) * n / num_ps)
}

/// One lookup (or gradient push) message to one PS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PsRequest {
    /// Target PS shard.
    pub ps: usize,
    /// The field this request serves, `None` for a packed request.
    pub field: Option<usize>,
    /// Unique IDs, ascending.
    pub ids: Vec<FeatureId>,
}

/// A batch's lookup plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupPlan {
    /// Requests ordered by `(ps, field)`.
    pub requests: Vec<PsRequest>,
    /// Number of unique IDs in the batch.
    pub unique_ids: usize,
}

impl LookupPlan {
    /// Rows requested from each PS (length `num_ps`), the quantity `T_emb` scales with.
    pub fn rows_per_ps(&self, num_ps: usize) -> Vec<usize> {
        let mut out = vec![0; num_ps];
        for r in &self.requests {
            out[r.ps] += r.ids.len();
        }
        out
    }
}

/// Sorted, deduplicated copy of `ids`.
pub fn unique_sorted(ids: &[FeatureId]) -> Vec<FeatureId> {
    let mut u = ids.to_vec();
    u.sort_unstable();
    u.dedup();
    u
}

/// One request of a plan as positions into the planned IDs: `(ps, field, positions)`.
pub type RequestGroup = (usize, Option<usize>, Vec<u32>);

/// Groups distinct `ids` into requests: one per PS holding any of them (packed), or one per
/// (PS, field) pair (unpacked); ordered by `(ps, field)`, positions ascending within each.
/// The worker plans its lookups and gradient pushes with this directly (positions point
/// into its deduplicated batch); [`plan_lookup`] is the same plan with the IDs spelled out.
pub fn request_groups(ids: &[FeatureId], num_ps: usize, packed: bool) -> Vec<RequestGroup> {
    let num_ps = num_ps.max(1);
    let mut per_ps: Vec<Vec<u32>> = vec![Vec::new(); num_ps];
    for (pos, &id) in ids.iter().enumerate() {
        per_ps[ps_of(id, num_ps)].push(pos as u32);
    }
    let mut out = Vec::new();
    for (ps, members) in per_ps.into_iter().enumerate() {
        if members.is_empty() {
            continue;
        }
        if packed {
            out.push((ps, None, members));
        } else {
            let mut per_field: std::collections::BTreeMap<usize, Vec<u32>> =
                std::collections::BTreeMap::new();
            for m in members {
                per_field
                    .entry(field_of(ids[m as usize]))
                    .or_default()
                    .push(m);
            }
            out.extend(per_field.into_iter().map(|(f, g)| (ps, Some(f), g)));
        }
    }
    out
}

/// Plans the lookups of a batch's IDs (any order, duplicates allowed) over `num_ps` shards.
pub fn plan_lookup(ids: &[FeatureId], num_ps: usize, packed: bool) -> LookupPlan {
    let unique = unique_sorted(ids);
    let requests = request_groups(&unique, num_ps, packed)
        .into_iter()
        .map(|(ps, field, positions)| PsRequest {
            ps,
            field,
            ids: positions.iter().map(|&p| unique[p as usize]).collect(),
        })
        .collect();
    LookupPlan {
        requests,
        unique_ids: unique.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> Vec<FeatureId> {
        (0..200)
            .map(|i| feature_id(i % 26, (i * 7919 % 50) as u64))
            .collect()
    }

    #[test]
    fn field_round_trips() {
        assert_eq!(field_of(feature_id(25, 0xdead_beef)), 25);
        assert_eq!(field_of(feature_id(0, u64::MAX)), 0);
    }

    #[test]
    fn plan_is_pure_and_covers_every_unique_id_once() {
        let a = plan_lookup(&ids(), 4, true);
        assert_eq!(a, plan_lookup(&ids(), 4, true));
        let mut all: Vec<FeatureId> = a.requests.iter().flat_map(|r| r.ids.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, unique_sorted(&ids()));
        assert!(a
            .requests
            .iter()
            .all(|r| r.ids.iter().all(|&id| ps_of(id, 4) == r.ps)));
    }

    #[test]
    fn packing_sends_at_most_one_request_per_ps() {
        let packed = plan_lookup(&ids(), 4, true);
        let unpacked = plan_lookup(&ids(), 4, false);
        assert!(packed.requests.len() <= 4);
        assert!(unpacked.requests.len() > 4 * 10);
        assert_eq!(packed.rows_per_ps(4), unpacked.rows_per_ps(4));
    }

    #[test]
    fn hash_spreads_ids_evenly() {
        let rows = plan_lookup(&(0..40_000).collect::<Vec<_>>(), 8, true).rows_per_ps(8);
        assert!(rows.iter().all(|&r| (4500..5500).contains(&r)), "{rows:?}");
    }

    #[test]
    fn dense_ranges_tile_the_vector() {
        let n = 1003;
        let total: usize = (0..7).map(|j| dense_range(j, 7, n).len()).sum();
        assert_eq!(total, n);
        assert_eq!(dense_range(6, 7, n).end, n);
    }
}
