//! Classification metrics for evaluating the trained model: AUC and log loss.

/// Area under the ROC curve via the rank-sum statistic; ties get their average rank.
/// Returns 0.5 when only one class is present.
pub fn auc(scores: &[f64], labels: &[f32]) -> f64 {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_pos += (i..=j).filter(|&k| labels[idx[k]] > 0.5).count() as f64 * avg_rank;
        i = j + 1;
    }
    let pos = labels.iter().filter(|&&l| l > 0.5).count() as f64;
    let neg = labels.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return 0.5;
    }
    (rank_sum_pos - pos * (pos + 1.0) / 2.0) / (pos * neg)
}

/// Mean binary cross-entropy of probabilities `p` against `labels`.
pub fn logloss(p: &[f64], labels: &[f32]) -> f64 {
    let s: f64 = p
        .iter()
        .zip(labels)
        .map(|(&p, &y)| {
            let p = p.clamp(1e-7, 1.0 - 1e-7);
            if y > 0.5 {
                -p.ln()
            } else {
                -(1.0 - p).ln()
            }
        })
        .sum();
    s / p.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_known_values() {
        assert_eq!(auc(&[0.1, 0.2, 0.8, 0.9], &[0.0, 0.0, 1.0, 1.0]), 1.0);
        assert_eq!(auc(&[0.9, 0.8, 0.2, 0.1], &[0.0, 0.0, 1.0, 1.0]), 0.0);
        assert_eq!(auc(&[0.5, 0.5], &[0.0, 1.0]), 0.5);
        assert_eq!(auc(&[0.1, 0.4, 0.35, 0.8], &[0.0, 0.0, 1.0, 1.0]), 0.75);
    }

    #[test]
    fn logloss_of_perfect_and_coin() {
        assert!(logloss(&[1.0, 0.0], &[1.0, 0.0]) < 1e-6);
        assert!((logloss(&[0.5], &[1.0]) - std::f64::consts::LN_2).abs() < 1e-12);
    }
}
