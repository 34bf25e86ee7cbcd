//! A small ordered map kept as a sorted `Vec`: the per-node pod lists and a job's DOING
//! shards hold tens of entries each and change on every pod start and stop, where a
//! `BTreeMap`'s node allocations and pointer chasing cost more than shifting a few words.
//! Iteration is in key order, exactly as a `BTreeMap`'s, so swapping one for the other
//! changes no output.

#[derive(Clone, Debug, PartialEq)]
pub struct VecMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord + Copy, V> VecMap<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, key: &K) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.cmp(key))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    /// The slot of `key`, checking slot `hint` before searching: a caller that visits keys
    /// in order passes one past the slot it found last, and mostly skips the search.
    pub fn slot_from(&self, key: &K, hint: usize) -> Option<usize> {
        match self.entries.get(hint) {
            Some((k, _)) if k == key => Some(hint),
            _ => self.find(key).ok(),
        }
    }

    /// The value in `slot` (from [`VecMap::slot_from`]).
    pub fn slot(&self, slot: usize) -> &V {
        &self.entries[slot].1
    }

    /// The value in `slot`, to change it in place.
    pub fn slot_mut(&mut self, slot: usize) -> &mut V {
        &mut self.entries[slot].1
    }

    /// Removes the entry in `slot` (from [`VecMap::slot_from`]).
    pub fn remove_slot(&mut self, slot: usize) -> V {
        self.entries.remove(slot).1
    }

    /// Sets `key` to `value`, returning the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Option<(&K, &V)> {
        self.entries.first().map(|(k, v)| (k, v))
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }
}

impl<K: Ord + Copy, V> std::ops::Index<&K> for VecMap<K, V> {
    type Output = V;

    fn index(&self, key: &K) -> &V {
        self.get(key).expect("key present in VecMap")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_engine::RngStreams;
    use rand::Rng;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_like_a_btreemap_under_random_operations() {
        let mut rng = RngStreams::new(5).stream("vecmap-test");
        let mut ours: VecMap<u32, u32> = VecMap::new();
        let mut theirs: BTreeMap<u32, u32> = BTreeMap::new();
        for step in 0..4_000u32 {
            let key = rng.gen_range(0..64u32);
            match rng.gen_range(0..4) {
                0 | 1 => assert_eq!(ours.insert(key, step), theirs.insert(key, step)),
                2 => assert_eq!(ours.remove(&key), theirs.remove(&key)),
                _ => {
                    if let Some(i) = ours.slot_from(&key, 0) {
                        *ours.slot_mut(i) += 1;
                    }
                    if let Some(v) = theirs.get_mut(&key) {
                        *v += 1;
                    }
                }
            }
            assert_eq!(ours.len(), theirs.len());
            assert_eq!(ours.contains_key(&key), theirs.contains_key(&key));
            let hint = rng.gen_range(0..70usize);
            assert_eq!(
                ours.slot_from(&key, hint)
                    .map(|i| (ours.keys().nth(i).unwrap(), ours.slot(i))),
                theirs.get_key_value(&key)
            );
            if step % 7 == 0 {
                if let Some(i) = ours.slot_from(&key, hint) {
                    assert_eq!(Some(ours.remove_slot(i)), theirs.remove(&key));
                }
            }
            assert_eq!(ours.first(), theirs.iter().next());
            assert!(ours.iter().eq(theirs.iter()));
        }
    }
}
