//! Numbered slots for the world's jobs and pods: ids are never reused (events name jobs
//! and pods by id and are checked against their state when they fire), but a slot's
//! contents can be released once nothing will read them again. A released or never-filled
//! slot costs one pointer, so memory follows what is live, not how many ids were issued.
//!
//! Indexing a slot that holds nothing is a bug in the world (an event that was not checked
//! with [`Slots::get`] first) and panics, naming the id.

use std::ops::{Index, IndexMut};

#[derive(Clone, Debug)]
pub struct Slots<T> {
    slots: Vec<Option<Box<T>>>,
    live: usize,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            slots: Vec::new(),
            live: 0,
        }
    }
}

impl<T> Slots<T> {
    /// `n` empty slots (ids `0..n` reserved, to be filled later).
    pub fn empty(n: usize) -> Self {
        Slots {
            slots: (0..n).map(|_| None).collect(),
            live: 0,
        }
    }

    /// Ids issued so far, live or not.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Slots holding something now.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Appends `x` under the next id and returns it.
    pub fn push(&mut self, x: T) -> usize {
        self.slots.push(Some(Box::new(x)));
        self.live += 1;
        self.slots.len() - 1
    }

    /// Fills slot `i` (reserved by [`Slots::empty`]).
    pub fn fill(&mut self, i: usize, x: T) {
        let slot = &mut self.slots[i];
        assert!(slot.is_none(), "slot {i} filled twice");
        *slot = Some(Box::new(x));
        self.live += 1;
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.slots.get(i).and_then(|s| s.as_deref())
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.slots.get_mut(i).and_then(|s| s.as_deref_mut())
    }

    /// Empties slot `i`, returning what it held.
    pub fn release(&mut self, i: usize) -> Option<T> {
        let x = self.slots.get_mut(i)?.take().map(|b| *b);
        if x.is_some() {
            self.live -= 1;
        }
        x
    }

    /// The live slots, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().filter_map(|s| s.as_deref())
    }
}

impl<T> Index<usize> for Slots<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        match self.slots.get(i).and_then(|s| s.as_deref()) {
            Some(x) => x,
            None => panic!("slot {i} holds nothing (released or never filled)"),
        }
    }
}

impl<T> IndexMut<usize> for Slots<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        match self.slots.get_mut(i).and_then(|s| s.as_deref_mut()) {
            Some(x) => x,
            None => panic!("slot {i} holds nothing (released or never filled)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_never_reused_and_released_slots_are_empty() {
        let mut s = Slots::empty(2);
        s.fill(1, "b");
        assert_eq!(s.push("c"), 2);
        assert_eq!((s.len(), s.live()), (3, 2));
        assert_eq!(s.get(0), None);
        assert_eq!(s.release(1), Some("b"));
        assert_eq!(s.release(1), None);
        assert_eq!(s.push("d"), 3);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), ["c", "d"]);
        assert_eq!(s.live(), 2);
        assert_eq!(s[2], "c");
    }

    #[test]
    #[should_panic(expected = "slot 0 holds nothing")]
    fn indexing_a_released_slot_is_a_bug() {
        let mut s = Slots::default();
        s.push(1);
        s.release(0);
        let _ = s[0];
    }
}
