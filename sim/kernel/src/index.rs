//! An open-addressing map from feature ID to a dense slot number (`u32`), the index behind
//! both the PS's embedding table ([`crate::table`]) and a worker's per-batch deduplication
//! ([`crate::worker`]).
//!
//! Slots are handed out in insertion order (0, 1, 2, ...), so the rows they name can live in
//! one contiguous arena: `row(slot) = arena[slot * row_len..]`. Probing is linear over
//! `(id, slot)` pairs of 16 bytes, so a hit usually costs one cache line; the table doubles
//! at a load factor of 1/2. Positions come from [`stable_hash`], so the layout (and with it
//! every iteration order derived from slots) is the same on every run and machine.
//!
//! Also here: [`Dedup`] (a batch's IDs deduplicated through an index) and the small memory
//! helpers the hot paths share (huge-page hints, prefetch, short-row copy).

use crate::plan::{stable_hash, FeatureId};

const EMPTY: u32 = u32::MAX;

/// A feature-ID -> slot map with slots assigned in insertion order.
#[derive(Debug, Clone)]
pub struct IdIndex {
    /// `(id, slot)`; `slot == EMPTY` marks a free entry.
    entries: Vec<(FeatureId, u32)>,
    mask: usize,
    len: usize,
}

impl Default for IdIndex {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl IdIndex {
    /// An empty index that holds `n` IDs without growing.
    pub fn with_capacity(n: usize) -> Self {
        let cap = (2 * n).next_power_of_two().max(16);
        IdIndex {
            entries: huge_vec(cap, (0, EMPTY)),
            mask: cap - 1,
            len: 0,
        }
    }

    /// Number of IDs held (the next slot to be handed out).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no ID is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every ID, keeping the allocation (slots restart at 0).
    pub fn clear(&mut self) {
        if self.len > 0 {
            self.entries.fill((0, EMPTY));
            self.len = 0;
        }
    }

    /// Prepares for `extra` more IDs (grows once instead of several times).
    pub fn reserve(&mut self, extra: usize) {
        let need = 2 * (self.len + extra);
        if need > self.entries.len() {
            self.grow_to(need.next_power_of_two());
        }
    }

    #[inline]
    fn home(&self, id: FeatureId) -> usize {
        stable_hash(id) as usize & self.mask
    }

    /// Like [`Self::get_or_insert`] with `hash == stable_hash(id)` already computed.
    #[inline]
    pub fn get_or_insert_hashed(&mut self, id: FeatureId, hash: u64) -> (u32, bool) {
        if 2 * (self.len + 1) > self.entries.len() {
            self.grow_to(2 * self.entries.len());
        }
        let mut i = hash as usize & self.mask;
        loop {
            let (k, s) = self.entries[i];
            if s == EMPTY {
                let slot = u32::try_from(self.len).expect("fewer than 2^32 - 1 IDs per index");
                self.entries[i] = (id, slot);
                self.len += 1;
                return (slot, true);
            }
            if k == id {
                return (s, false);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Like [`Self::prefetch`] with `hash == stable_hash(id)`.
    #[inline]
    pub fn prefetch_hashed(&self, hash: u64) {
        prefetch_read(&self.entries[hash as usize & self.mask]);
    }

    /// Like [`Self::get`] with `hash == stable_hash(id)` already computed.
    #[inline]
    pub fn get_hashed(&self, id: FeatureId, hash: u64) -> Option<u32> {
        let mut i = hash as usize & self.mask;
        loop {
            let (k, s) = self.entries[i];
            if s == EMPTY {
                return None;
            }
            if k == id {
                return Some(s);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The slot of `id`, if held.
    #[inline]
    pub fn get(&self, id: FeatureId) -> Option<u32> {
        self.get_hashed(id, stable_hash(id))
    }

    /// The slot of `id` and whether it was just inserted (it then gets slot `len() - 1`).
    #[inline]
    pub fn get_or_insert(&mut self, id: FeatureId) -> (u32, bool) {
        self.get_or_insert_hashed(id, stable_hash(id))
    }

    /// Hints the CPU to fetch `id`'s home entry (used a few IDs ahead of a probe).
    #[inline]
    pub fn prefetch(&self, id: FeatureId) {
        prefetch_read(&self.entries[self.home(id)]);
    }

    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.entries, huge_vec(cap, (0, EMPTY)));
        self.mask = cap - 1;
        for (k, s) in old.into_iter().filter(|e| e.1 != EMPTY) {
            let mut i = self.home(k);
            while self.entries[i].1 != EMPTY {
                i = (i + 1) & self.mask;
            }
            self.entries[i] = (k, s);
        }
    }
}

/// A batch's IDs deduplicated before the lookup, as PERSIA and TorchRec do: each distinct
/// ID is fetched once, and every position of the batch points at its row (`slots`).
#[derive(Debug, Clone, Default)]
pub struct Dedup {
    index: IdIndex,
    /// The distinct IDs, in first-seen order.
    pub unique: Vec<FeatureId>,
    /// For every ID of the batch, its position in `unique`.
    pub slots: Vec<u32>,
}

impl Dedup {
    /// Deduplicates `ids` (about `n` of them), replacing the previous batch.
    pub fn run(&mut self, ids: impl IntoIterator<Item = FeatureId>, n: usize) {
        self.index.clear();
        self.index.reserve(n);
        self.unique.clear();
        self.slots.clear();
        self.slots.reserve(n);
        for id in ids {
            let (slot, new) = self.index.get_or_insert(id);
            if new {
                self.unique.push(id);
            }
            self.slots.push(slot);
        }
    }
}

/// Below this many bytes a buffer is not worth a huge-page hint.
const HUGE_MIN_BYTES: usize = 4 << 20;

/// A vector of `n` copies of `fill` whose memory is hinted for transparent huge pages before
/// it is first touched (see [`advise_huge`]).
pub fn huge_vec<T: Clone>(n: usize, fill: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge(&v);
    v.resize(n, fill);
    v
}

/// Grows `v` by `extra` default elements, reallocating (at least doubling) into memory hinted
/// for huge pages when it must grow: an arena of embedding rows is read at random, and 4 KiB
/// pages make nearly every row a TLB miss as well as a cache miss.
pub fn grow_huge<T: Clone + Default>(v: &mut Vec<T>, extra: usize) {
    let need = v.len() + extra;
    if need > v.capacity() {
        let mut bigger = Vec::with_capacity(need.max(2 * v.capacity()));
        advise_huge(&bigger);
        bigger.extend_from_slice(v);
        *v = bigger;
    }
    v.resize(need, T::default());
}

/// Hints the kernel to back `v`'s allocation (its whole capacity) with transparent huge
/// pages (`madvise(MADV_HUGEPAGE)`, honoured where THP is `always` or `madvise`). Only the
/// 2 MiB-aligned interior is advised; small buffers are left alone. A hint: failures are
/// ignored and other platforms do nothing.
pub fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let aligned = start.next_multiple_of(HUGE);
        let end = (start + bytes) / HUGE * HUGE;
        if end > aligned {
            // SAFETY: the range lies inside `v`'s live allocation (its capacity), which stays
            // mapped while `v` is borrowed; MADV_HUGEPAGE changes no contents and no
            // protection, only how the kernel may back the pages.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
}

/// `dst = src` for one short row, inlined (a `memmove` call per row costs more than the copy).
#[inline]
pub(crate) fn copy_row(dst: &mut [f32], src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

/// Asks the CPU to bring `x`'s cache line closer (a no-op where unsupported).
#[inline]
pub fn prefetch_read<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is a hint; it never faults, whatever the address, and `x` is a
    // valid reference anyway. SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (x as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn matches_a_hash_map_and_numbers_slots_in_insertion_order() {
        let mut idx = IdIndex::with_capacity(4);
        let mut reference: HashMap<FeatureId, u32> = HashMap::new();
        for k in 0..50_000u64 {
            let id = stable_hash(k % 7_919) ^ (k % 3);
            let before = reference.len();
            let want = *reference.entry(id).or_insert(before as u32);
            let (got, new) = idx.get_or_insert(id);
            assert_eq!(got, want, "id {id}");
            assert_eq!(new, reference.len() > before);
        }
        assert_eq!(idx.len(), reference.len());
        for (&id, &slot) in &reference {
            assert_eq!(idx.get(id), Some(slot));
        }
        assert_eq!(idx.get(u64::MAX - 5), None);
        idx.clear();
        assert!(idx.is_empty());
        assert_eq!(idx.get_or_insert(42), (0, true));
    }

    #[test]
    fn dedup_keeps_each_id_once_and_points_every_position_at_it() {
        let mut d = Dedup::default();
        d.run([5, 9, 5, 7, 9, 5], 6);
        assert_eq!(d.unique, vec![5, 9, 7]);
        assert_eq!(d.slots, vec![0, 1, 0, 2, 1, 0]);
        d.run([3], 1);
        assert_eq!((d.unique.clone(), d.slots.clone()), (vec![3], vec![0]));
    }
}
