//! Nodes, pod placement and the capacity invariant.
//!
//! Placement is first-fit (default) or best-fit. First-fit uses a segment tree holding,
//! per subtree, the largest free CPU, memory and GPU of any one node; a subtree whose
//! maxima cannot hold the request is skipped. That keeps a placement near O(log n) on a
//! 2,000-node cluster instead of a linear scan; and since allocations only shrink free
//! space, the node first-fit found last for a request stays the first candidate for the
//! same request until space is freed, so a job's identical pods mostly skip the search.
//! Best-fit scans all nodes. The cluster also lists the nodes whose free room may have
//! grown since the scheduler last asked (`take_grown`): a request that fitted nowhere then
//! can fit only there, so a scheduling pass tries only what may fit.

use crate::Resources;
use serde::{Deserialize, Serialize};

/// How a pod chooses its node.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// The lowest-numbered node that fits.
    #[default]
    FirstFit,
    /// The node left with the least free capacity (CPU and memory shares summed).
    BestFit,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    pub capacity: Resources,
    pub allocated: Resources,
    /// GPU model name, empty for CPU nodes.
    pub gpu_model: String,
    /// Held by co-located high-priority services (not schedulable for training).
    pub reserved: Resources,
    /// Failed and under repair: nothing runs or is placed here.
    pub down: bool,
}

impl Node {
    pub fn new(name: String, capacity: Resources, gpu_model: String) -> Self {
        Node {
            name,
            capacity,
            allocated: Resources::ZERO,
            gpu_model,
            reserved: Resources::ZERO,
            down: false,
        }
    }

    /// Room for new training pods.
    pub fn free(&self) -> Resources {
        if self.down {
            Resources::ZERO
        } else {
            self.capacity - self.allocated - self.reserved
        }
    }
}

/// Nodes with grown room listed one by one before [`Cluster::take_grown`] says "any".
const GROWN_KEPT: usize = 32;

pub struct Cluster {
    nodes: Vec<Node>,
    placement: Placement,
    /// Segment tree over nodes: per tree slot, the max free (cpu, mem, gpu) of one node below.
    tree: Vec<Resources>,
    leaves: usize,
    capacity: Resources,
    allocated: Resources,
    /// Sum of every node's [`Node::free`], kept as nodes change (integers, so exact).
    free: Resources,
    /// The largest capacity of any node, per resource (cores, memory and GPUs may come
    /// from different nodes).
    node_max: Resources,
    /// First-fit memo: `(req, n)` means no node below `n` has room for `req`. Allocations
    /// only shrink free space, so it stays true until space may be freed (a release, a
    /// changed reservation, a node going down or coming back), which clears it. Pods of one job, placed one after
    /// another with the same request, then skip the tree search.
    first_fit_hint: Option<(Resources, usize)>,
    /// Nodes whose free room may have grown (the events that clear `first_fit_hint`)
    /// since the last [`Cluster::take_grown`]: a request that fitted nowhere then can fit
    /// only on one of these now. `None`: more than [`GROWN_KEPT`], so any node.
    grown: Option<Vec<usize>>,
}

impl Cluster {
    pub fn new(nodes: Vec<Node>, placement: Placement) -> Self {
        assert!(!nodes.is_empty(), "a cluster needs at least one node");
        let leaves = nodes.len().next_power_of_two();
        let capacity = nodes
            .iter()
            .fold(Resources::ZERO, |acc, n| acc + n.capacity);
        let mut cluster = Cluster {
            nodes,
            placement,
            tree: vec![Resources::ZERO; 2 * leaves],
            leaves,
            capacity,
            allocated: Resources::ZERO,
            free: Resources::ZERO,
            node_max: Resources::ZERO,
            first_fit_hint: None,
            grown: None,
        };
        for i in 0..cluster.nodes.len() {
            let n = &cluster.nodes[i];
            cluster.tree[leaves + i] = n.free();
            cluster.free += n.free();
            cluster.node_max = max3(cluster.node_max, n.capacity);
        }
        for slot in (1..leaves).rev() {
            cluster.tree[slot] = max3(cluster.tree[2 * slot], cluster.tree[2 * slot + 1]);
        }
        cluster
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn capacity(&self) -> Resources {
        self.capacity
    }

    pub fn allocated(&self) -> Resources {
        self.allocated
    }

    /// Room for new pods summed over nodes (a policy's view of free capacity, in O(1)).
    pub fn free(&self) -> Resources {
        self.free
    }

    /// The largest node capacity per resource: what one pod could ever get.
    pub fn node_max(&self) -> Resources {
        self.node_max
    }

    /// Per resource, the most free room on any one node now: a request over it in some
    /// resource fits nowhere until room is released.
    pub fn max_free(&self) -> Resources {
        self.tree[1]
    }

    /// The nodes whose free room may have grown since the last call (a release, a changed
    /// reservation, a node going down or coming back; allocations only shrink it), in
    /// order, possibly repeated; `None` for any node (too many to list, or no call yet).
    pub fn take_grown(&mut self) -> Option<Vec<usize>> {
        self.grown.replace(Vec::new())
    }

    fn note_grown(&mut self, node: usize) {
        if let Some(grown) = &mut self.grown {
            if grown.len() < GROWN_KEPT {
                grown.push(node);
            } else {
                self.grown = None;
            }
        }
    }

    /// Whether some node could hold `req` if it were empty.
    pub fn could_ever_fit(&self, req: &Resources) -> bool {
        self.nodes.iter().any(|n| req.fits_in(&n.capacity))
    }

    /// Whether `count` pods of `each` and one of `one` could run together on the empty
    /// cluster (first fit over the nodes' capacities, the `count` first): a job's PSes and
    /// the first worker it needs to train. A configuration that fails this can never run.
    pub fn could_ever_fit_together(&self, each: &Resources, count: u32, one: &Resources) -> bool {
        let mut free: Vec<Resources> = self.nodes.iter().map(|n| n.capacity).collect();
        let mut take = |r: &Resources| match free.iter_mut().find(|f| r.fits_in(f)) {
            Some(f) => {
                *f -= *r;
                true
            }
            None => false,
        };
        (0..count).all(|_| take(each)) && take(one)
    }

    /// Finds a node for `req` by the placement rule, allocates it, and returns its index.
    pub fn place(&mut self, req: &Resources) -> Option<usize> {
        let node = match self.placement {
            Placement::FirstFit => {
                let hinted = self
                    .first_fit_hint
                    .filter(|(r, n)| r == req && req.fits_in(&self.nodes[*n].free()));
                let node = match hinted {
                    Some((_, n)) => n,
                    None => self.first_fit(req)?,
                };
                self.first_fit_hint = Some((*req, node));
                node
            }
            Placement::BestFit => self.best_fit(req)?,
        };
        self.allocate(node, req);
        Some(node)
    }

    /// Whether any node currently has room for `req`.
    pub fn has_room(&self, req: &Resources) -> bool {
        req.fits_in(&self.tree[1]) && self.first_fit(req).is_some()
    }

    pub fn release(&mut self, node: usize, req: &Resources) {
        self.first_fit_hint = None;
        self.note_grown(node);
        self.nodes[node].allocated -= *req;
        self.allocated -= *req;
        self.update(node);
    }

    /// Sets what co-located services hold on `node`. The caller first makes room (evicts
    /// pods); the reservation must fit beside the allocation.
    pub fn set_reserved(&mut self, node: usize, reserved: Resources) {
        self.first_fit_hint = None;
        self.note_grown(node);
        let n = &mut self.nodes[node];
        n.reserved = reserved;
        assert!(
            (n.allocated + n.reserved).fits_in(&n.capacity),
            "node {} over capacity with services: {:?} + {:?} > {:?}",
            n.name,
            n.allocated,
            n.reserved,
            n.capacity
        );
        self.update(node);
    }

    /// Takes a node out of service (its pods must already be released) or back in.
    pub fn set_down(&mut self, node: usize, down: bool) {
        assert!(
            !down || self.nodes[node].allocated == Resources::ZERO,
            "a node goes down only after its pods are gone"
        );
        self.first_fit_hint = None;
        self.note_grown(node);
        self.nodes[node].down = down;
        self.update(node);
    }

    fn allocate(&mut self, node: usize, req: &Resources) {
        let n = &mut self.nodes[node];
        n.allocated += *req;
        // The capacity invariant: checked on every allocation, in every build.
        assert!(
            !n.down && (n.allocated + n.reserved).fits_in(&n.capacity),
            "node {} over capacity: {:?} > {:?}",
            n.name,
            n.allocated,
            n.capacity
        );
        self.allocated += *req;
        self.update(node);
    }

    fn update(&mut self, node: usize) {
        let mut slot = self.leaves + node;
        let free = self.nodes[node].free();
        // The leaf still holds the node's previous free room.
        self.free = self.free - self.tree[slot] + free;
        self.tree[slot] = free;
        while slot > 1 {
            slot /= 2;
            let max = max3(self.tree[2 * slot], self.tree[2 * slot + 1]);
            if self.tree[slot] == max {
                break; // Unchanged here, so unchanged above.
            }
            self.tree[slot] = max;
        }
    }

    fn first_fit(&self, req: &Resources) -> Option<usize> {
        if !req.fits_in(&self.tree[1]) {
            return None;
        }
        // Iterative depth-first search, left child first, pruning subtrees whose maxima
        // cannot hold the request. The stack holds at most one pending right sibling per
        // level plus the slot in hand, so a fixed array of 65 covers any `usize` tree.
        let mut stack = [0usize; 65];
        stack[0] = 1;
        let mut len = 1;
        while len > 0 {
            len -= 1;
            let slot = stack[len];
            if !req.fits_in(&self.tree[slot]) {
                continue;
            }
            if slot >= self.leaves {
                let node = slot - self.leaves;
                if node < self.nodes.len() && req.fits_in(&self.nodes[node].free()) {
                    return Some(node);
                }
                continue;
            }
            stack[len] = 2 * slot + 1;
            stack[len + 1] = 2 * slot;
            len += 2;
        }
        None
    }

    fn best_fit(&self, req: &Resources) -> Option<usize> {
        let mut best: Option<(f64, usize)> = None;
        for (i, n) in self.nodes.iter().enumerate() {
            let free = n.free();
            if !req.fits_in(&free) {
                continue;
            }
            let left = (free.cpu_milli - req.cpu_milli) as f64 / n.capacity.cpu_milli.max(1) as f64
                + (free.mem_mb - req.mem_mb) as f64 / n.capacity.mem_mb.max(1) as f64;
            if best.is_none_or(|(b, _)| left < b) {
                best = Some((left, i));
            }
        }
        best.map(|(_, i)| i)
    }

    /// Re-checks the invariant over all nodes (used by tests and debug assertions).
    pub fn check_invariants(&self) {
        let mut total = Resources::ZERO;
        let mut free = Resources::ZERO;
        for n in &self.nodes {
            assert!(
                (n.allocated + n.reserved).fits_in(&n.capacity),
                "node {} over capacity",
                n.name
            );
            assert!(
                !n.down || n.allocated == Resources::ZERO,
                "node {} is down but holds pods",
                n.name
            );
            total += n.allocated;
            free += n.free();
        }
        assert_eq!(
            total, self.allocated,
            "cluster allocation total out of sync"
        );
        assert_eq!(free, self.free, "cluster free total out of sync");
    }
}

fn max3(a: Resources, b: Resources) -> Resources {
    Resources {
        cpu_milli: a.cpu_milli.max(b.cpu_milli),
        mem_mb: a.mem_mb.max(b.mem_mb),
        gpu: a.gpu.max(b.gpu),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_engine::RngStreams;
    use rand::Rng;

    fn node(cores: f64, mem: u64, gpu: u32) -> Node {
        Node::new(
            format!("n{cores}"),
            Resources::new(cores, mem, gpu),
            String::new(),
        )
    }

    #[test]
    fn first_fit_takes_the_lowest_node_that_fits() {
        let mut c = Cluster::new(
            vec![node(4.0, 100, 0), node(8.0, 100, 0), node(16.0, 100, 1)],
            Placement::FirstFit,
        );
        assert_eq!(c.place(&Resources::new(6.0, 10, 0)), Some(1));
        assert_eq!(c.place(&Resources::new(2.0, 10, 0)), Some(0));
        assert_eq!(c.place(&Resources::new(1.0, 10, 1)), Some(2));
        assert_eq!(c.place(&Resources::new(17.0, 10, 0)), None);
    }

    #[test]
    fn grown_lists_the_nodes_whose_room_may_have_grown() {
        let mut c = Cluster::new(
            vec![node(4.0, 100, 0), node(8.0, 100, 0)],
            Placement::FirstFit,
        );
        assert_eq!(c.take_grown(), None, "before the first call: any node");
        assert_eq!(c.take_grown(), Some(vec![]));
        let r = Resources::new(2.0, 10, 0);
        let n = c.place(&r).expect("room");
        assert_eq!(
            c.take_grown(),
            Some(vec![]),
            "an allocation only takes room"
        );
        c.release(n, &r);
        c.set_down(1, true);
        assert_eq!(c.take_grown(), Some(vec![n, 1]));
        for _ in 0..=GROWN_KEPT {
            let n = c.place(&r).expect("room");
            c.release(n, &r);
        }
        assert_eq!(c.take_grown(), None, "too many to list: any node");
    }

    #[test]
    fn best_fit_takes_the_tightest_node() {
        let mut c = Cluster::new(
            vec![node(16.0, 100, 0), node(8.0, 100, 0), node(4.0, 50, 0)],
            Placement::BestFit,
        );
        assert_eq!(c.place(&Resources::new(4.0, 50, 0)), Some(2));
        assert_eq!(c.place(&Resources::new(4.0, 50, 0)), Some(1));
    }

    #[test]
    fn random_place_and_release_never_over_allocates_and_matches_linear_scan() {
        let mut rng = RngStreams::new(11).stream("cluster-test");
        let nodes: Vec<Node> = (0..37u32)
            .map(|i| {
                node(
                    f64::from(8 + (i % 5) * 8),
                    u64::from(64 + (i % 3) * 64),
                    i % 2,
                )
            })
            .collect();
        let mut c = Cluster::new(nodes, Placement::FirstFit);
        let mut placed: Vec<(usize, Resources)> = Vec::new();
        let mut last = Resources::new(1.0, 1, 0);
        for _ in 0..5_000 {
            if rng.gen_bool(0.55) || placed.is_empty() {
                // Half the requests repeat the last one, as a job's pods do, so the
                // first-fit memo is exercised between releases.
                let req = if rng.gen_bool(0.5) {
                    last
                } else {
                    Resources::new(
                        f64::from(rng.gen_range(1..20u32)),
                        rng.gen_range(1..100),
                        rng.gen_range(0..2),
                    )
                };
                last = req;
                let expect = c.nodes().iter().position(|n| req.fits_in(&n.free()));
                let got = c.place(&req);
                assert_eq!(got, expect);
                if let Some(n) = got {
                    placed.push((n, req));
                }
            } else {
                let (n, req) = placed.swap_remove(rng.gen_range(0..placed.len()));
                c.release(n, &req);
            }
            c.check_invariants();
        }
    }
}
