//! The event queue: a binary min-heap keyed by `(time, insertion sequence)`.
//!
//! Ties at the same millisecond are broken by the order in which events were pushed, so
//! the order of simultaneous events is a pure function of the code path, never of the
//! heap's internal layout. This is what makes runs byte-identical.

use crate::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed so that `BinaryHeap` (a max-heap) pops the earliest `(time, seq)` first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A priority queue of events ordered by `(time, insertion sequence)`.
/// Sequence numbers of [`EventQueue::push`] start here; those of
/// [`EventQueue::push_first`] count up from 0, so they sort first at equal times.
const NORMAL_SEQ: u64 = 1 << 63;

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    first_seq: u64,
    now: SimTime,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: NORMAL_SEQ,
            first_seq: 0,
            now: SimTime::ZERO,
        }
    }

    /// Schedules `event` at `time` ahead of every event pushed with [`EventQueue::push`]
    /// for the same time, whenever either was pushed; among themselves such events keep
    /// their push order. A stream fed lazily (a trace's arrivals, one queued at a time)
    /// thus orders exactly as if all of it had been queued first, up front.
    pub fn push_first(&mut self, time: SimTime, event: E) {
        let seq = self.first_seq;
        self.first_seq += 1;
        assert!(seq < NORMAL_SEQ, "too many first-class events");
        self.push_at(time, seq, event);
    }

    /// Schedules `event` at absolute time `time`. Scheduling in the past is a bug.
    pub fn push(&mut self, time: SimTime, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.push_at(time, seq, event);
    }

    fn push_at(&mut self, time: SimTime, seq: u64, event: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < now {}",
            self.now
        );
        self.heap.push(Entry { time, seq, event });
    }

    /// Removes and returns the earliest event, advancing the queue's clock to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = self.heap.pop()?;
        self.now = entry.time;
        Some((entry.time, entry.event))
    }

    /// Drops the queued events `keep` rejects (events that can no longer change anything,
    /// such as timers of things already gone). The order of the rest is unchanged: it
    /// depends only on `(time, seq)`, never on the heap's layout.
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        self.heap.retain(|entry| keep(&entry.event));
    }

    /// The time of the last popped event.
    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_class_events_precede_others_at_equal_times_whenever_pushed() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), "c");
        q.push_first(SimTime(5), "a");
        q.push(SimTime(1), "x");
        assert_eq!(q.pop(), Some((SimTime(1), "x")));
        q.push_first(SimTime(5), "b");
        q.push(SimTime(5), "d");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
    }

    #[test]
    fn pops_in_time_order_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), "c");
        q.push(SimTime(1), "a");
        q.push(SimTime(5), "d");
        q.push(SimTime(1), "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, vec!["a", "b", "c", "d"]);
    }

    #[test]
    fn retain_drops_events_and_keeps_the_order_of_the_rest() {
        let mut q = EventQueue::new();
        for (t, e) in [(3, 30), (1, 11), (2, 20), (1, 10), (3, 31), (2, 21)] {
            q.push(SimTime(t), e);
        }
        q.retain(|e| e % 10 == 0);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, vec![10, 20, 30]);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn pushing_into_the_past_is_rejected() {
        let mut q = EventQueue::new();
        q.push(SimTime(10), 1);
        q.pop();
        q.push(SimTime(9), 2);
    }
}
