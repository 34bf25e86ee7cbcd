//! The discrete-event engine: integer simulated time, an event queue ordered by
//! `(time, insertion sequence)`, named seeded random streams, and the loop that hands
//! each event to a [`World`].
//!
//! The engine knows nothing about clusters, jobs or GPUs. The event type is a parameter,
//! so the domain crate defines one closed `enum` and matches it in one place.

mod queue;
mod rng;
mod time;

pub use queue::EventQueue;
pub use rng::{RngStreams, SimRng};
pub use time::SimTime;

/// The domain side of a simulation: it owns all state and reacts to one event at a time.
pub trait World {
    /// The closed set of events this world understands.
    type Event;

    /// Handles one event at simulated time `now`. New events go into `queue`.
    fn handle(&mut self, now: SimTime, event: Self::Event, queue: &mut EventQueue<Self::Event>);

    /// Whether the run should stop before the next event (e.g. a time horizon was reached).
    fn done(&self, _now: SimTime) -> bool {
        false
    }
}

/// Runs `world` until the queue is empty or the world reports it is done.
/// Returns the number of events handled and the time of the last one.
pub fn run<W: World>(world: &mut W, queue: &mut EventQueue<W::Event>) -> (u64, SimTime) {
    run_observed(world, queue, u64::MAX, |_, _, _| {})
}

/// [`run`], calling `observe(world, now, handled)` after every `every` handled events, for
/// progress reports. It sees the world read-only, so it cannot change the run.
pub fn run_observed<W: World>(
    world: &mut W,
    queue: &mut EventQueue<W::Event>,
    every: u64,
    mut observe: impl FnMut(&W, SimTime, u64),
) -> (u64, SimTime) {
    let mut handled = 0u64;
    let mut last = SimTime::ZERO;
    let mut until_observe = every;
    while let Some((now, event)) = queue.pop() {
        if world.done(now) {
            break;
        }
        last = now;
        handled += 1;
        world.handle(now, event, queue);
        until_observe -= 1;
        if until_observe == 0 {
            observe(world, now, handled);
            until_observe = every;
        }
    }
    (handled, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A world that counts down, scheduling one follow-up per event.
    struct Countdown {
        seen: Vec<(u64, u32)>,
    }

    impl World for Countdown {
        type Event = u32;
        fn handle(&mut self, now: SimTime, event: u32, queue: &mut EventQueue<u32>) {
            self.seen.push((now.as_ms(), event));
            if event > 0 {
                queue.push(now + SimTime::from_secs(1), event - 1);
            }
        }
    }

    #[test]
    fn loop_runs_until_queue_is_empty() {
        let mut world = Countdown { seen: Vec::new() };
        let mut queue = EventQueue::new();
        queue.push(SimTime::ZERO, 3);
        let (handled, last) = run(&mut world, &mut queue);
        assert_eq!(handled, 4);
        assert_eq!(last, SimTime::from_secs(3));
        assert_eq!(world.seen, vec![(0, 3), (1000, 2), (2000, 1), (3000, 0)]);
    }

    #[test]
    fn an_observed_run_is_the_same_run_seen_every_n_events() {
        let mut world = Countdown { seen: Vec::new() };
        let mut queue = EventQueue::new();
        queue.push(SimTime::ZERO, 4);
        let mut seen = Vec::new();
        let (handled, last) = run_observed(&mut world, &mut queue, 2, |w, now, n| {
            seen.push((now.as_ms(), n, w.seen.len()));
        });
        assert_eq!((handled, last), (5, SimTime::from_secs(4)));
        assert_eq!(world.seen.len(), 5);
        assert_eq!(seen, vec![(1000, 2, 2), (3000, 4, 4)]);
    }
}
