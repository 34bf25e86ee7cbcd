//! NSGA-II (Deb et al. 2002) over small integer genomes, seeded: fast non-dominated sorting,
//! crowding distance, binary tournament, uniform crossover and step mutation. Used by
//! `dlrover` to generate Pareto-optimal resource plans (DLRover-RM Sec. 4.3); written here
//! because the crates on offer pull in heavy dependencies.
//!
//! Objectives are minimised. Determinism: every draw comes from the caller's seeded stream
//! and ties are broken by genome order.

use dlsim_engine::SimRng;
use rand::Rng;
use std::collections::BTreeMap;

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

/// A genome (each gene in `0..upper[i]`) and its objective vector.
pub type Scored = (Vec<u32>, Vec<f64>);

/// `a` dominates `b`: no worse in every objective and better in one.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x <= y) && a.iter().zip(b).any(|(x, y)| x < y)
}

/// Fronts of non-dominated sorting, as indices into `pop`.
pub fn fronts(pop: &[Scored]) -> Vec<Vec<usize>> {
    let n = pop.len();
    let mut dominated_by = vec![0usize; n];
    // One flat n x n matrix instead of a list per individual: this runs every generation.
    let mut dom = vec![false; n * n];
    for i in 0..n {
        for j in (i + 1)..n {
            if dominates(&pop[i].1, &pop[j].1) {
                dom[i * n + j] = true;
                dominated_by[j] += 1;
            } else if dominates(&pop[j].1, &pop[i].1) {
                dom[j * n + i] = true;
                dominated_by[i] += 1;
            }
        }
    }
    let mut out = Vec::new();
    let mut current: Vec<usize> = (0..n).filter(|&i| dominated_by[i] == 0).collect();
    while !current.is_empty() {
        let mut next = Vec::new();
        for &i in &current {
            for j in 0..n {
                if dom[i * n + j] {
                    dominated_by[j] -= 1;
                    if dominated_by[j] == 0 {
                        next.push(j);
                    }
                }
            }
        }
        next.sort_unstable();
        out.push(current);
        current = next;
    }
    out
}

fn crowding(pop: &[Scored], front: &[usize]) -> Vec<f64> {
    let mut dist = vec![0.0; front.len()];
    if front.len() <= 2 {
        return vec![f64::INFINITY; front.len()];
    }
    let objectives = pop[front[0]].1.len();
    for m in 0..objectives {
        let mut order: Vec<usize> = (0..front.len()).collect();
        order.sort_by(|&a, &b| {
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

/// Runs NSGA-II from `seeds` (e.g. the current configuration) plus random genomes and
/// returns the final first front, deduplicated and sorted by genome.
pub fn run(
    upper: &[u32],
    seeds: &[Vec<u32>],
    eval: &mut dyn FnMut(&[u32]) -> Vec<f64>,
    settings: Settings,
    rng: &mut SimRng,
) -> Vec<Scored> {
    // Evaluations are memoised: the model is cheap, but genomes repeat a lot.
    let mut cache: BTreeMap<Vec<u32>, Vec<f64>> = BTreeMap::new();
    let mut score = |g: Vec<u32>, cache: &mut BTreeMap<Vec<u32>, Vec<f64>>| -> Scored {
        let f = cache.entry(g.clone()).or_insert_with(|| eval(&g)).clone();
        (g, f)
    };
    let n = settings.population.max(4);
    let mut pop: Vec<Scored> = seeds
        .iter()
        .take(n)
        .map(|g| score(g.clone(), &mut cache))
        .collect();
    while pop.len() < n {
        let g: Vec<u32> = upper.iter().map(|&u| rng.gen_range(0..u.max(1))).collect();
        pop.push(score(g, &mut cache));
    }
    for _ in 0..settings.generations {
        let (rank, crowd) = rank_and_crowding(&pop);
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
            let mut child: Vec<u32> = pop[pa]
                .0
                .iter()
                .zip(&pop[pb].0)
                .map(|(&x, &y)| if rng.gen_bool(0.5) { x } else { y })
                .collect();
            for (gene, &u) in child.iter_mut().zip(upper) {
                if u > 1 && rng.gen_bool(settings.mutation_prob) {
                    let step = rng.gen_range(1..=2) as i64 * if rng.gen_bool(0.5) { 1 } else { -1 };
                    *gene = (i64::from(*gene) + step).clamp(0, i64::from(u) - 1) as u32;
                }
            }
            children.push(score(child, &mut cache));
        }
        pop.extend(children);
        pop.sort_by(|a, b| a.0.cmp(&b.0));
        pop.dedup_by(|a, b| a.0 == b.0);
        let (rank, crowd) = rank_and_crowding(&pop);
        let mut order: Vec<usize> = (0..pop.len()).collect();
        order.sort_by(|&a, &b| {
            rank[a]
                .cmp(&rank[b])
                .then(crowd[b].total_cmp(&crowd[a]))
                .then(a.cmp(&b))
        });
        pop = order.into_iter().take(n).map(|i| pop[i].clone()).collect();
    }
    let front = &fronts(&pop)[0];
    let mut out: Vec<Scored> = front.iter().map(|&i| pop[i].clone()).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn ordered(x: f64) -> u64 {
    // Crowding distances are >= 0 (or infinite); their bit patterns order like the values.
    x.to_bits()
}

fn rank_and_crowding(pop: &[Scored]) -> (Vec<usize>, Vec<f64>) {
    let mut rank = vec![0; pop.len()];
    let mut crowd = vec![0.0; pop.len()];
    for (r, front) in fronts(pop).iter().enumerate() {
        let d = crowding(pop, front);
        for (k, &i) in front.iter().enumerate() {
            rank[i] = r;
            crowd[i] = d[k];
        }
    }
    (rank, crowd)
}

/// The exact Pareto front by enumerating every genome (small spaces only).
pub fn exhaustive(upper: &[u32], eval: &mut dyn FnMut(&[u32]) -> Vec<f64>) -> Vec<Scored> {
    let mut all = Vec::new();
    let mut g = vec![0u32; upper.len()];
    'outer: loop {
        all.push((g.clone(), eval(&g)));
        for i in 0..g.len() {
            g[i] += 1;
            if g[i] < upper[i] {
                continue 'outer;
            }
            g[i] = 0;
        }
        break;
    }
    let front = &fronts(&all)[0];
    let mut out: Vec<Scored> = front.iter().map(|&i| all[i].clone()).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_engine::RngStreams;

    /// Cost = x + y, loss = 100 / (1 + x*y): a genuine trade-off.
    fn eval(g: &[u32]) -> Vec<f64> {
        let (x, y) = (f64::from(g[0]), f64::from(g[1]));
        vec![x + y, 100.0 / (1.0 + x * y)]
    }

    #[test]
    fn returns_a_non_dominated_set_close_to_the_exact_front() {
        let upper = [16, 16];
        let mut rng = RngStreams::new(3).stream("nsga");
        let front = run(
            &upper,
            &[vec![1, 1]],
            &mut eval,
            Settings::default(),
            &mut rng,
        );
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
