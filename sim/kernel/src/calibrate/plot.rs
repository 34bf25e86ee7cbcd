//! Measured vs fitted throughput over `w/p`, `lambda_w` and `lambda_p` (DLRover-RM Fig. 11).
//!
//! One figure per kind: three panels at the reference shape, each varying one quantity with
//! the others at a baseline (p = 2, lambda = 2 where the grid has them; circles are
//! measurements, filled = held out, lines the fitted shape model at the same configurations),
//! and a fourth with measured vs fitted throughput of every shape on log axes. Written as PNG and SVG with
//! `dlsim-plot`'s embedded DejaVu Sans, so the output does not depend on system fonts.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Calibration, Measurement};

/// A panel: x value of a measurement, the series it belongs to (None = not shown), labels.
struct Panel {
    x_desc: &'static str,
    series_desc: &'static str,
    x: fn(&Measurement) -> f64,
    series: fn(&Measurement, &Baseline) -> Option<u32>,
}

/// Values the other dimensions are held at in a panel (Figure 11 varies one at a time).
struct Baseline {
    ps: u32,
    lambda: f64,
}

const PANELS: [Panel; 3] = [
    Panel {
        x_desc: "workers / PS (w/p)",
        series_desc: "p",
        x: |m| f64::from(m.config.workers) / f64::from(m.config.ps),
        series: |m, b| {
            (m.config.worker_cores == b.lambda && m.config.ps_cores == b.lambda)
                .then_some(m.config.ps)
        },
    },
    Panel {
        x_desc: "cores per worker (lambda_w)",
        series_desc: "w",
        x: |m| m.config.worker_cores,
        series: |m, b| {
            (m.config.ps == b.ps && m.config.ps_cores == b.lambda).then_some(m.config.workers)
        },
    },
    Panel {
        x_desc: "cores per PS (lambda_p)",
        series_desc: "w",
        x: |m| m.config.ps_cores,
        series: |m, b| {
            (m.config.ps == b.ps && m.config.worker_cores == b.lambda).then_some(m.config.workers)
        },
    },
];

fn baseline(ms: &[&Measurement]) -> Baseline {
    let has_ps = |p| ms.iter().any(|m| m.config.ps == p);
    let has_l = |l| ms.iter().any(|m| m.config.worker_cores == l);
    Baseline {
        ps: if has_ps(2) {
            2
        } else {
            ms.first().map_or(1, |m| m.config.ps)
        },
        lambda: if has_l(2.0) { 2.0 } else { 1.0 },
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    cal: &Calibration,
    kind: &str,
) -> anyhow::Result<()> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plotting: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let all: Vec<&Measurement> = cal.measurements.iter().filter(|m| m.kind == kind).collect();
    let reference = (cal.reference.batch, cal.reference.emb_dim);
    let ms: Vec<&Measurement> = all
        .iter()
        .copied()
        .filter(|m| (m.point.batch, m.point.emb_dim) == reference)
        .collect();
    let shape = cal.shape_fit.get(kind).copied().unwrap_or_default();
    let model = |m: &Measurement| shape.throughput(&m.shape_inputs());
    let (mape, shape_mape) = cal.fit.get(kind).map_or((f64::NAN, f64::NAN), |f| {
        (f.heldout_mape, f.heldout_shape_mape)
    });
    let title = format!(
        "{kind}: measured (o; filled = held out) vs fitted (line); held-out MAPE {mape:.1}%, held-out shapes {shape_mape:.1}%"
    );
    let root = root.titled(&title, ("sans-serif", 20)).map_err(err)?;
    let base = baseline(&ms);
    let areas = root.split_evenly((1, 4));
    draw_parity(&areas[3], &all, &model)?;
    for (area, panel) in areas.iter().zip(PANELS) {
        let shown: Vec<(u32, &Measurement)> = ms
            .iter()
            .filter_map(|m| (panel.series)(m, &base).map(|s| (s, *m)))
            .collect();
        let x_max = shown.iter().map(|(_, m)| (panel.x)(m)).fold(1.0, f64::max) * 1.1;
        let y_max = shown
            .iter()
            .flat_map(|(_, m)| [m.throughput, model(m)])
            .fold(1.0, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .caption(
                format!(
                    "m={} D={}; lines: one per {}",
                    reference.0, reference.1, panel.series_desc
                ),
                ("sans-serif", 14),
            )
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max / 1000.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(panel.x_desc)
            .y_desc("thousand samples/s")
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        let mut ids: Vec<u32> = shown.iter().map(|(s, _)| *s).collect();
        ids.sort_unstable();
        ids.dedup();
        for (k, id) in ids.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            let mut pts: Vec<&Measurement> = shown
                .iter()
                .filter(|(s, _)| s == id)
                .map(|(_, m)| *m)
                .collect();
            pts.sort_by(|a, b| (panel.x)(a).total_cmp(&(panel.x)(b)));
            let line = pts.iter().map(|m| ((panel.x)(m), model(m) / 1000.0));
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))
                .map_err(err)?
                .label(format!("{}={id}", panel.series_desc))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
            let dots = pts.iter().map(|m| {
                let style = if m.point.heldout {
                    color.filled()
                } else {
                    color.stroke_width(1)
                };
                Circle::new(((panel.x)(m), m.throughput / 1000.0), 4, style)
            });
            chart.draw_series(dots).map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Measured vs predicted throughput of every point of every shape on log axes, with the
/// line of perfect agreement; held-out points filled, held-out shapes in red.
fn draw_parity<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    ms: &[&Measurement],
    model: &dyn Fn(&Measurement) -> f64,
) -> anyhow::Result<()> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plotting: {e:?}");
    let vals: Vec<f64> = ms
        .iter()
        .flat_map(|m| [m.throughput, model(m)])
        .filter(|v| *v > 0.0)
        .collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min).min(1e12) / 1.5;
    let hi = vals.iter().copied().fold(lo * 2.0, f64::max) * 1.5;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .caption(
            "every shape m x D (red = held-out shape)",
            ("sans-serif", 14),
        )
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("measured samples/s")
        .y_desc("fitted samples/s")
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.mix(0.5)))
        .map_err(err)?;
    let dots = ms
        .iter()
        .filter(|m| m.throughput > 0.0 && model(m) > 0.0)
        .map(|m| {
            let color = if m.point.heldout_shape { RED } else { BLUE };
            let style = if m.point.heldout {
                color.filled()
            } else {
                color.stroke_width(1)
            };
            Circle::new((m.throughput, model(m)), 3, style)
        });
    chart.draw_series(dots).map_err(err)?;
    Ok(())
}

/// Writes `<stem>_<kind>.png` and `.svg` next to `out` for every kind; returns the paths.
pub fn write_plots(cal: &Calibration, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    dlsim_plot::register_embedded_font()?;
    let dir = out.parent().unwrap_or(Path::new("."));
    let stem = out
        .file_stem()
        .map_or("calibration".into(), |s| s.to_string_lossy().into_owned());
    let mut written = Vec::new();
    for kind in cal.kinds.keys() {
        let png = dir.join(format!("{stem}_{kind}.png"));
        draw(
            BitMapBackend::new(&png, (2000, 480)).into_drawing_area(),
            cal,
            kind,
        )?;
        let svg = dir.join(format!("{stem}_{kind}.svg"));
        draw(
            SVGBackend::new(&svg, (2000, 480)).into_drawing_area(),
            cal,
            kind,
        )?;
        written.extend([png, svg]);
    }
    Ok(written)
}
