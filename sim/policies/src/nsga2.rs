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
//! (O(n log n), Jensen 2003) instead of Deb's O(n^2) pairwise comparison. Sort keys are
//! precomputed integers, evaluations are memoised in an Fx-hashed map, and all buffers are
//! reused across generations. The fronts and distances are bit-identical to Deb's
//! definitions (a test checks them against reference implementations), so the search
//! takes the same path, draw for draw, and chooses the same plans.

use dlsim_engine::SimRng;
use rand::Rng;
use rustc_hash::FxHashMap;

/// Search settings.
#[derive(Clone, Copy, Debug, PartialEq)]
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

/// An `i64` that orders like the value, so sorts compare plain integer keys: `f64::total_cmp`
/// with -0 read as 0, since `dominates` (and Deb's definitions) treat them as equal.
fn total_key(x: f64) -> i64 {
    let b = (x + 0.0).to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

/// Buffers for ranking and crowding, reused so a search allocates once.
#[derive(Default)]
struct Scratch {
    /// Front number per individual.
    rank: Vec<usize>,
    /// Crowding distance per individual.
    crowd: Vec<f64>,
    /// Individuals in (f0, f1, index) order; after `rank_and_crowding`, grouped front by
    /// front (each front still in that order), front `f` at `starts[f]..starts[f + 1]`.
    order: Vec<usize>,
    starts: Vec<usize>,
    keys: Vec<(i64, i64, usize)>,
    /// Each front's last member while sweeping.
    last: Vec<Objectives>,
    grouped: Vec<usize>,
    next: Vec<usize>,
    buf: Vec<usize>,
}

/// Each individual's front number (0 = non-dominated) into `s.rank`, and `s.order` in
/// (f0, f1, index) order.
///
/// Bi-objective sweep: in (f0, f1) order, a point can only be dominated by points before
/// it, and within a front f1 falls as f0 rises, so a front's last member has its lowest
/// f1. A point joins the first front whose last member does not dominate it; the fronts'
/// last f1 values rise with the front number, so that front is found by binary search.
fn ranks<const N: usize>(pop: &[Scored<N>], s: &mut Scratch) {
    s.keys.clear();
    s.keys.extend(
        pop.iter()
            .enumerate()
            .map(|(i, p)| (total_key(p.1[0]), total_key(p.1[1]), i)),
    );
    s.keys.sort_unstable();
    s.order.clear();
    s.order.extend(s.keys.iter().map(|k| k.2));
    s.rank.clear();
    s.rank.resize(pop.len(), 0);
    s.last.clear();
    for &i in &s.order {
        let f = pop[i].1;
        let k = s.last.partition_point(|l| dominates(l, &f));
        s.rank[i] = k;
        match s.last.get_mut(k) {
            Some(l) => *l = f,
            None => s.last.push(f),
        }
    }
}

/// Each individual's front number and crowding distance, as Deb's algorithm defines them:
/// within a front, per objective, the two ends get infinity and each interior member the
/// gap between its neighbours over the front's range, ties ordered by index (fronts are
/// at most twice the population, so each objective's order is a plain sort).
fn rank_and_crowding<const N: usize>(pop: &[Scored<N>], s: &mut Scratch) {
    let n = pop.len();
    ranks(pop, s);
    let fronts = s.rank.iter().max().map_or(0, |&r| r + 1);
    s.starts.clear();
    s.starts.resize(fronts + 1, 0);
    for &r in &s.rank {
        s.starts[r + 1] += 1;
    }
    for f in 0..fronts {
        s.starts[f + 1] += s.starts[f];
    }
    // Counting sort by front, keeping the (f0, f1, index) order within each.
    s.grouped.clear();
    s.grouped.resize(n, 0);
    s.next.clear();
    s.next.extend_from_slice(&s.starts[..fronts]);
    for &i in &s.order {
        let r = s.rank[i];
        s.grouped[s.next[r]] = i;
        s.next[r] += 1;
    }
    std::mem::swap(&mut s.order, &mut s.grouped);
    s.crowd.clear();
    s.crowd.resize(n, 0.0);
    for f in 0..fronts {
        let front = &s.order[s.starts[f]..s.starts[f + 1]];
        for m in 0..2 {
            // The front by (value, index): ties keep index order, as in Deb's definition.
            s.buf.clear();
            s.buf.extend_from_slice(front);
            s.buf.sort_unstable_by_key(|&i| (total_key(pop[i].1[m]), i));
            let b = &s.buf;
            let (lo, hi) = (pop[b[0]].1[m], pop[b[b.len() - 1]].1[m]);
            s.crowd[b[0]] = f64::INFINITY;
            s.crowd[b[b.len() - 1]] = f64::INFINITY;
            if hi > lo && b.len() > 2 {
                for k in 1..b.len() - 1 {
                    let gap = pop[b[k + 1]].1[m] - pop[b[k - 1]].1[m];
                    s.crowd[b[k]] += gap / (hi - lo);
                }
            }
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
    let n = settings.population.max(4);
    let mut cache: FxHashMap<[u32; N], Objectives> =
        FxHashMap::with_capacity_and_hasher(n * (settings.generations + 1), Default::default());
    let mut score = |g: [u32; N]| -> Scored<N> { (g, *cache.entry(g).or_insert_with(|| eval(&g))) };
    let mut pop: Vec<Scored<N>> = Vec::with_capacity(2 * n);
    pop.extend(seeds.iter().take(n).map(|&g| score(g)));
    while pop.len() < n {
        let g: [u32; N] = std::array::from_fn(|i| rng.gen_range(0..upper[i].max(1)));
        pop.push(score(g));
    }
    let mut s = Scratch::default();
    let mut survivors: Vec<Scored<N>> = Vec::with_capacity(2 * n);
    // Selection keys: front, then descending crowding, then index, packed in one integer.
    let mut keys: Vec<u128> = Vec::with_capacity(2 * n);
    for _ in 0..settings.generations {
        rank_and_crowding(&pop, &mut s);
        let (rank, crowd) = (&s.rank, &s.crowd);
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
        // Children go to `survivors` (free until selection) while `pick` reads `pop`.
        for _ in 0..n {
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
            survivors.push(score(child));
        }
        pop.append(&mut survivors);
        // Equal genomes carry the same memoised objectives: whichever copy stays is the same.
        pop.sort_unstable_by_key(|a| a.0);
        pop.dedup_by(|a, b| a.0 == b.0);
        // Environmental selection: by front, then by descending crowding, then index.
        rank_and_crowding(&pop, &mut s);
        keys.clear();
        keys.extend((0..pop.len()).map(|i| {
            (s.rank[i] as u128) << 96 | u128::from(!ordered(s.crowd[i])) << 32 | i as u128
        }));
        keys.sort_unstable();
        survivors.extend(keys.iter().take(n).map(|&k| pop[k as u32 as usize]));
        std::mem::swap(&mut pop, &mut survivors);
        survivors.clear();
    }
    first_front(&pop)
}

/// The first front, sorted by genome.
pub fn first_front<const N: usize>(pop: &[Scored<N>]) -> Vec<Scored<N>> {
    let mut s = Scratch::default();
    ranks(pop, &mut s);
    let mut out: Vec<Scored<N>> = (0..pop.len())
        .filter(|&i| s.rank[i] == 0)
        .map(|i| pop[i])
        .collect();
    out.sort_by_key(|a| a.0);
    out
}

fn ordered(x: f64) -> u64 {
    // Crowding distances are >= 0 (or infinite); their bit patterns order like the values.
    x.to_bits()
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
        let mut s = Scratch::default();
        ranks(pop, &mut s);
        let mut out: Vec<Vec<usize>> = vec![Vec::new(); s.rank.iter().max().map_or(0, |&r| r + 1)];
        for (i, &r) in s.rank.iter().enumerate() {
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
                (pop[front[a]].1[m] + 0.0)
                    .total_cmp(&(pop[front[b]].1[m] + 0.0))
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
            // Centred on zero, with signed zeros: `dominates` treats -0 and 0 as equal
            // while the sorts order them, which must not change any front or distance.
            let value = |rng: &mut SimRng| {
                let v = f64::from(rng.gen_range(0..span) - span / 2);
                if v == 0.0 && rng.gen_bool(0.5) {
                    -0.0
                } else {
                    v
                }
            };
            let pop: Vec<Scored<2>> = (0..n)
                .map(|i| ([i as u32, 0], [value(&mut rng), value(&mut rng)]))
                .collect();
            let reference = fronts_pairwise(&pop);
            assert_eq!(fronts(&pop), reference, "case {case}: {pop:?}");
            let mut s = Scratch::default();
            rank_and_crowding(&pop, &mut s);
            let (rank, crowd) = (&s.rank, &s.crowd);
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
