//! Geometry kept inside the plot rectangle before anything is drawn: polylines are cut at
//! its edges (Liang-Barsky), filled bands are clipped as polygons (Sutherland-Hodgman), and
//! points outside it are dropped.
//!
//! Clipping in axis space (after any log transform) is what keeps a line from leaving the
//! axes in every backend alike; plotters itself clips nothing, and the bitmap backend's
//! wide-line joins overshoot sharp spikes by several pixels. Those few pixels of stroke are
//! painted over afterwards (`draw.rs`), but the geometry handed to plotters is already
//! inside, so an SVG or PDF holds no coordinate outside its axes.

/// An axis-space rectangle: `x.0 <= x <= x.1`, `y.0 <= y <= y.1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub x: (f64, f64),
    pub y: (f64, f64),
}

impl Rect {
    pub fn contains(&self, (x, y): (f64, f64)) -> bool {
        x >= self.x.0 && x <= self.x.1 && y >= self.y.0 && y <= self.y.1
    }
}

/// The parts of a polyline inside `r`, each a run of at least two points. A point that is
/// not finite breaks the line.
pub fn polyline(points: &[(f64, f64)], r: &Rect) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let seg = if finite(&a) && finite(&b) {
            segment(a, b, r)
        } else {
            None
        };
        match seg {
            Some((p, q)) => {
                if current.last() != Some(&p) {
                    flush(&mut runs, &mut current);
                    current.push(p);
                }
                current.push(q);
                // A segment that leaves the rectangle ends the run.
                if q != b {
                    flush(&mut runs, &mut current);
                }
            }
            None => flush(&mut runs, &mut current),
        }
    }
    flush(&mut runs, &mut current);
    runs
}

fn flush(runs: &mut Vec<Vec<(f64, f64)>>, current: &mut Vec<(f64, f64)>) {
    if current.len() >= 2 {
        runs.push(std::mem::take(current));
    }
    current.clear();
}

/// Liang-Barsky: the part of segment `a`-`b` inside `r`, if any.
fn segment(a: (f64, f64), b: (f64, f64), r: &Rect) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - r.x.0),
        (dx, r.x.1 - a.0),
        (-dy, a.1 - r.y.0),
        (dy, r.y.1 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    if t0 > t1 {
        return None;
    }
    let at = |t: f64| {
        if t == 0.0 {
            a
        } else if t == 1.0 {
            b
        } else {
            (a.0 + t * dx, a.1 + t * dy)
        }
    };
    Some((at(t0), at(t1)))
}

/// Sutherland-Hodgman: the polygon `poly` cut to `r` (empty when nothing is inside).
pub fn polygon(poly: &[(f64, f64)], r: &Rect) -> Vec<(f64, f64)> {
    type Edge = (
        fn(&(f64, f64), &Rect) -> bool,
        fn((f64, f64), (f64, f64), &Rect) -> (f64, f64),
    );
    fn at_x(a: (f64, f64), b: (f64, f64), x: f64) -> (f64, f64) {
        (x, a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0))
    }
    fn at_y(a: (f64, f64), b: (f64, f64), y: f64) -> (f64, f64) {
        (a.0 + (b.0 - a.0) * (y - a.1) / (b.1 - a.1), y)
    }
    let edges: [Edge; 4] = [
        (|p, r| p.0 >= r.x.0, |a, b, r| at_x(a, b, r.x.0)),
        (|p, r| p.0 <= r.x.1, |a, b, r| at_x(a, b, r.x.1)),
        (|p, r| p.1 >= r.y.0, |a, b, r| at_y(a, b, r.y.0)),
        (|p, r| p.1 <= r.y.1, |a, b, r| at_y(a, b, r.y.1)),
    ];
    let mut out: Vec<(f64, f64)> = poly
        .iter()
        .copied()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    for (inside, cut) in edges {
        let input = std::mem::take(&mut out);
        for (i, &cur) in input.iter().enumerate() {
            let prev = input[(i + input.len() - 1) % input.len()];
            match (inside(&prev, r), inside(&cur, r)) {
                (true, true) => out.push(cur),
                (true, false) => out.push(cut(prev, cur, r)),
                (false, true) => {
                    out.push(cut(prev, cur, r));
                    out.push(cur);
                }
                (false, false) => {}
            }
        }
    }
    if out.len() < 3 {
        out.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Rect = Rect {
        x: (0.0, 10.0),
        y: (0.0, 10.0),
    };

    #[test]
    fn a_spike_above_the_rectangle_is_cut_at_its_edge() {
        let runs = polyline(&[(1.0, 5.0), (2.0, 20.0), (3.0, 5.0)], &R);
        assert_eq!(
            runs,
            vec![
                vec![(1.0, 5.0), (1.3333333333333333, 10.0)],
                vec![(2.6666666666666665, 10.0), (3.0, 5.0)],
            ]
        );
        for p in runs.iter().flatten() {
            assert!(R.contains(*p), "{p:?}");
        }
    }

    #[test]
    fn inside_lines_are_kept_whole_and_nan_breaks_them() {
        let line = [(1.0, 1.0), (2.0, 2.0), (3.0, 1.0)];
        assert_eq!(polyline(&line, &R), vec![line.to_vec()]);
        let broken = [
            (1.0, 1.0),
            (2.0, 2.0),
            (f64::NAN, 1.0),
            (4.0, 1.0),
            (5.0, 2.0),
        ];
        assert_eq!(polyline(&broken, &R).len(), 2);
        assert!(polyline(&[(20.0, 1.0), (30.0, 1.0)], &R).is_empty());
    }

    #[test]
    fn bands_are_clipped_to_the_rectangle() {
        let band = [(-5.0, 2.0), (5.0, 2.0), (5.0, 15.0), (-5.0, 15.0)];
        let clipped = polygon(&band, &R);
        assert!(clipped.iter().all(|p| R.contains(*p)), "{clipped:?}");
        let xs: Vec<f64> = clipped.iter().map(|p| p.0).collect();
        let ys: Vec<f64> = clipped.iter().map(|p| p.1).collect();
        assert_eq!(xs.iter().cloned().fold(f64::INFINITY, f64::min), 0.0);
        assert_eq!(ys.iter().cloned().fold(f64::NEG_INFINITY, f64::max), 10.0);
        assert!(polygon(&[(20.0, 1.0), (30.0, 1.0), (25.0, 5.0)], &R).is_empty());
    }
}
