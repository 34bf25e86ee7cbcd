//! NSGA-II (Deb et al. 2002) over small fixed-size integer genomes with two objectives,
//! seeded: non-dominated sorting, crowding distance, binary tournament, uniform crossover
//! and step mutation. Used by `dlrover` to generate Pareto-optimal resource plans
//! (DLRover-RM Sec. 4.3: resource cost against throughput gain); written here because the
//! crates on offer pull in heavy dependencies.
//!
//! Objectives are minimised. Determinism: every draw comes from the caller's seeded stream
//! and ties are broken by genome order.
//!
//! Speed: the problem is bi-objective, so the fronts come from one sort and a sweep
//! (O(n log n), Jensen 2003) instead of Deb's O(n^2) pairwise comparison; genomes and
//! objective vectors are arrays, so the loop allocates almost nothing. The fronts are the
//! same sets, in the same order, as the pairwise algorithm's (a test checks this against a
//! reference implementation), so the search takes the same path and chooses the same plans.

use dlsim_engine::SimRng;
use rand::Rng;
use std::collections::HashMap;

/// Search settings.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub population: usize,
    pub generations: usize,
    pub mutation_prob: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            population: 20,
            generations: 12,
            mutation_prob: 0.3,
        }
    }
}

/// Two minimised objectives.
pub type Objectives = [f64; 2];

/// A genome (each gene in `0..upper[i]`) and its objective vector.
pub type Scored<const N: usize> = ([u32; N], Objectives);

/// `a` dominates `b`: no worse in every objective and better in one.
pub fn dominates(a: &Objectives, b: &Objectives) -> bool {
    a[0] <= b[0] && a[1] <= b[1] && (a[0] < b[0] || a[1] < b[1])
}

/// Each individual's front number (0 = non-dominated), into `rank`; `order` is scratch.
///
/// Bi-objective sweep: in (f0, f1) order, a point can only be dominated by points before
/// it, and within a front f1 falls as f0 rises, so a front's last member has its lowest
/// f1. A point joins the first front whose last member does not dominate it; the fronts'
/// last f1 values rise with the front number, so that front is found by binary search.
fn ranks<const N: usize>(pop: &[Scored<N>], rank: &mut Vec<usize>, order: &mut Vec<usize>) {
    rank.clear();
    rank.resize(pop.len(), 0);
    order.clear();
    order.extend(0..pop.len());
    order.sort_unstable_by(|&a, &b| {
        let (x, y) = (&pop[a].1, &pop[b].1);
        x[0].total_cmp(&y[0])
            .then(x[1].total_cmp(&y[1]))
            .then(a.cmp(&b))
    });
    // Each front's last member, the only one a later point can be compared with.
    let mut last: Vec<Objectives> = Vec::new();
    for &i in order.iter() {
        let f = pop[i].1;
        let k = last.partition_point(|l| dominates(l, &f));
        rank[i] = k;
        match last.get_mut(k) {
            Some(l) => *l = f,
            None => last.push(f),
        }
    }
}

/// Runs NSGA-II from `seeds` (e.g. the current configuration) plus random genomes and
/// returns the final first front, deduplicated and sorted by genome.
pub fn run<const N: usize>(
    upper: &[u32; N],
    seeds: &[[u32; N]],
    eval: &mut dyn FnMut(&[u32; N]) -> Objectives,
    settings: Settings,
    rng: &mut SimRng,
) -> Vec<Scored<N>> {
    // Evaluations are memoised: the model is cheap, but genomes repeat a lot. Only looked
    // up, never iterated, so the map's order cannot leak into the result.
    let mut cache: HashMap<[u32; N], Objectives> = HashMap::new();
    let mut score = |g: [u32; N]| -> Scored<N> { (g, *cache.entry(g).or_insert_with(|| eval(&g))) };
    let n = settings.population.max(4);
    let mut pop: Vec<Scored<N>> = seeds.iter().take(n).map(|&g| score(g)).collect();
    while pop.len() < n {
        let g: [u32; N] = std::array::from_fn(|i| rng.gen_range(0..upper[i].max(1)));
        pop.push(score(g));
    }
    pop.reserve(n);
    let (mut rank, mut crowd, mut order) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..settings.generations {
        rank_and_crowding(&pop, &mut rank, &mut crowd, &mut order);
        let pick = |rng: &mut SimRng| {
            let (a, b) = (rng.gen_range(0..pop.len()), rng.gen_range(0..pop.len()));
            let better = (rank[a], std::cmp::Reverse(ordered(crowd[a])))
                <= (rank[b], std::cmp::Reverse(ordered(crowd[b])));
            if better {
                a
            } else {
                b
            }
        };
        let mut children = Vec::with_capacity(n);
        while children.len() < n {
            let (pa, pb) = (pick(rng), pick(rng));
            let (x, y) = (pop[pa].0, pop[pb].0);
            let mut child: [u32; N] =
                std::array::from_fn(|i| if rng.gen_bool(0.5) { x[i] } else { y[i] });
            for (gene, &u) in child.iter_mut().zip(upper) {
                if u > 1 && rng.gen_bool(settings.mutation_prob) {
                    let step = rng.gen_range(1..=2) as i64 * if rng.gen_bool(0.5) { 1 } else { -1 };
                    *gene = (i64::from(*gene) + step).clamp(0, i64::from(u) - 1) as u32;
                }
            }
            children.push(score(child));
        }
        pop.extend(children);
        pop.sort_unstable_by_key(|a| a.0);
        pop.dedup_by(|a, b| a.0 == b.0);
        rank_and_crowding(&pop, &mut rank, &mut crowd, &mut order);
        order.clear();
        order.extend(0..pop.len());
        order.sort_unstable_by(|&a, &b| {
            rank[a]
                .cmp(&rank[b])
                .then(crowd[b].total_cmp(&crowd[a]))
                .then(a.cmp(&b))
        });
        pop = order.iter().take(n).map(|&i| pop[i]).collect();
    }
    first_front(&pop)
}

/// The first front, sorted by genome.
fn first_front<const N: usize>(pop: &[Scored<N>]) -> Vec<Scored<N>> {
    let (mut rank, mut order) = (Vec::new(), Vec::new());
    ranks(pop, &mut rank, &mut order);
    let mut out: Vec<Scored<N>> = (0..pop.len())
        .filter(|&i| rank[i] == 0)
        .map(|i| pop[i])
        .collect();
    out.sort_by_key(|a| a.0);
    out
}

fn ordered(x: f64) -> u64 {
    // Crowding distances are >= 0 (or infinite); their bit patterns order like the values.
    x.to_bits()
}

/// Each individual's front number and crowding distance, as Deb's algorithm defines them:
/// within a front, per objective, the two ends get infinity and each interior member the
/// gap between its neighbours over the front's range, ties ordered by index. One sort per
/// objective by (front, value, index) lays every front out in that order, so no front is
/// materialised.
fn rank_and_crowding<const N: usize>(
    pop: &[Scored<N>],
    rank: &mut Vec<usize>,
    crowd: &mut Vec<f64>,
    order: &mut Vec<usize>,
) {
    let n = pop.len();
    ranks(pop, rank, order);
    crowd.clear();
    crowd.resize(n, 0.0);
    for m in 0..2 {
        order.sort_unstable_by(|&a, &b| {
            rank[a]
                .cmp(&rank[b])
                .then(pop[a].1[m].total_cmp(&pop[b].1[m]))
                .then(a.cmp(&b))
        });
        let mut start = 0;
        while start < n {
            let r = rank[order[start]];
            let end = start + order[start..].iter().take_while(|&&i| rank[i] == r).count();
            let front = &order[start..end];
            let (lo, hi) = (pop[front[0]].1[m], pop[front[front.len() - 1]].1[m]);
            crowd[front[0]] = f64::INFINITY;
            crowd[front[front.len() - 1]] = f64::INFINITY;
            if hi > lo && front.len() > 2 {
                for k in 1..front.len() - 1 {
                    let gap = pop[front[k + 1]].1[m] - pop[front[k - 1]].1[m];
                    crowd[front[k]] += gap / (hi - lo);
                }
            }
            start = end;
        }
    }
}

/// The exact Pareto front by enumerating every genome (small spaces only).
pub fn exhaustive<const N: usize>(
    upper: &[u32; N],
    eval: &mut dyn FnMut(&[u32; N]) -> Objectives,
) -> Vec<Scored<N>> {
    let mut all = Vec::new();
    let mut g = [0u32; N];
    'outer: loop {
        all.push((g, eval(&g)));
        for i in 0..N {
            g[i] += 1;
            if g[i] < upper[i] {
                continue 'outer;
            }
            g[i] = 0;
        }
        break;
    }
    first_front(&all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_engine::RngStreams;

    /// Cost = x + y, loss = 100 / (1 + x*y): a genuine trade-off.
    fn eval(g: &[u32; 2]) -> Objectives {
        let (x, y) = (f64::from(g[0]), f64::from(g[1]));
        [x + y, 100.0 / (1.0 + x * y)]
    }

    /// Fronts of non-dominated sorting, as indices into `pop`, each front in index order.
    fn fronts<const N: usize>(pop: &[Scored<N>]) -> Vec<Vec<usize>> {
        let (mut rank, mut order) = (Vec::new(), Vec::new());
        ranks(pop, &mut rank, &mut order);
        let mut out: Vec<Vec<usize>> = vec![Vec::new(); rank.iter().max().map_or(0, |&r| r + 1)];
        for (i, &r) in rank.iter().enumerate() {
            out[r].push(i);
        }
        out
    }

    /// Deb's O(n^2) fast non-dominated sort, the reference for the bi-objective sweep.
    fn fronts_pairwise(pop: &[Scored<2>]) -> Vec<Vec<usize>> {
        let n = pop.len();
        let mut count = vec![0usize; n];
        let mut dominated: Vec<Vec<usize>> = vec![Vec::new(); n];
        for i in 0..n {
            for j in 0..n {
                if dominates(&pop[i].1, &pop[j].1) {
                    dominated[i].push(j);
                    count[j] += 1;
                }
            }
        }
        let mut out = Vec::new();
        let mut current: Vec<usize> = (0..n).filter(|&i| count[i] == 0).collect();
        while !current.is_empty() {
            let mut next = Vec::new();
            for &i in &current {
                for &j in &dominated[i] {
                    count[j] -= 1;
                    if count[j] == 0 {
                        next.push(j);
                    }
                }
            }
            next.sort_unstable();
            out.push(current);
            current = next;
        }
        out
    }

    /// Deb's crowding distance of one front, computed front by front.
    fn crowding_reference(pop: &[Scored<2>], front: &[usize]) -> Vec<f64> {
        if front.len() <= 2 {
            return vec![f64::INFINITY; front.len()];
        }
        let mut dist = vec![0.0; front.len()];
        for m in 0..2 {
            let mut order: Vec<usize> = (0..front.len()).collect();
            order.sort_unstable_by(|&a, &b| {
                pop[front[a]].1[m]
                    .total_cmp(&pop[front[b]].1[m])
                    .then(a.cmp(&b))
            });
            let lo = pop[front[order[0]]].1[m];
            let hi = pop[front[order[order.len() - 1]]].1[m];
            dist[order[0]] = f64::INFINITY;
            dist[order[order.len() - 1]] = f64::INFINITY;
            if hi > lo {
                for k in 1..order.len() - 1 {
                    let gap = pop[front[order[k + 1]]].1[m] - pop[front[order[k - 1]]].1[m];
                    dist[order[k]] += gap / (hi - lo);
                }
            }
        }
        dist
    }

    #[test]
    fn sweep_ranks_and_crowding_equal_deb_algorithm_with_ties_and_duplicates() {
        let mut rng = RngStreams::new(5).stream("fronts");
        for case in 0..300 {
            let n = rng.gen_range(1..60);
            // Small integer objectives make ties and exact duplicates common.
            let span = if case % 2 == 0 { 6 } else { 1000 };
            let pop: Vec<Scored<2>> = (0..n)
                .map(|i| {
                    let f = [
                        f64::from(rng.gen_range(0..span)),
                        f64::from(rng.gen_range(0..span)),
                    ];
                    ([i as u32, 0], f)
                })
                .collect();
            let reference = fronts_pairwise(&pop);
            assert_eq!(fronts(&pop), reference, "case {case}: {pop:?}");
            let (mut rank, mut crowd, mut order) = (Vec::new(), Vec::new(), Vec::new());
            rank_and_crowding(&pop, &mut rank, &mut crowd, &mut order);
            for (r, front) in reference.iter().enumerate() {
                let dist = crowding_reference(&pop, front);
                for (k, &i) in front.iter().enumerate() {
                    assert_eq!(rank[i], r, "case {case}: rank of {i}");
                    assert_eq!(crowd[i].to_bits(), dist[k].to_bits(), "case {case}: {i}");
                }
            }
        }
    }

    #[test]
    fn returns_a_non_dominated_set_close_to_the_exact_front() {
        let upper = [16, 16];
        let mut rng = RngStreams::new(3).stream("nsga");
        let front = run(&upper, &[[1, 1]], &mut eval, Settings::default(), &mut rng);
        assert!(front.len() >= 5);
        for a in &front {
            for b in &front {
                assert!(!dominates(&a.1, &b.1), "{a:?} dominates {b:?}");
            }
        }
        let exact = exhaustive(&upper, &mut eval);
        // Every NSGA-II point is on, or within 10% of, the exact front at the same cost.
        for (g, f) in &front {
            let best = exact
                .iter()
                .filter(|(_, e)| e[0] <= f[0])
                .map(|(_, e)| e[1])
                .fold(f64::INFINITY, f64::min);
            assert!(f[1] <= best * 1.1 + 1e-9, "{g:?} {f:?} vs exact {best}");
        }
    }

    #[test]
    fn is_deterministic_for_a_seed() {
        let upper = [10, 10];
        let a = run(
            &upper,
            &[],
            &mut eval,
            Settings::default(),
            &mut RngStreams::new(9).stream("n"),
        );
        let b = run(
            &upper,
            &[],
            &mut eval,
            Settings::default(),
            &mut RngStreams::new(9).stream("n"),
        );
        assert_eq!(a, b);
    }
}
