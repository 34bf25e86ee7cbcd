//! Measured vs fitted throughput over `w/p`, `lambda_w` and `lambda_p` (DLRover-RM Fig. 11).
//!
//! One figure per kind with three panels; circles are measurements, crosses the fitted model
//! at the same configurations, filled markers are held-out points. Written as PNG and SVG with
//! an embedded DejaVu Sans (see `assets/`), so the output does not depend on system fonts.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use super::{Calibration, Measurement};

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

fn ensure_font() -> anyhow::Result<()> {
    register_font("sans-serif", FontStyle::Normal, FONT)
        .map_err(|_| anyhow!("embedded font is invalid"))
}

type Axis = (&'static str, fn(&Measurement) -> f64);

const AXES: [Axis; 3] = [
    ("workers / PS (w/p)", |m| {
        f64::from(m.config.workers) / f64::from(m.config.ps)
    }),
    ("cores per worker (lambda_w)", |m| m.config.worker_cores),
    ("cores per PS (lambda_p)", |m| m.config.ps_cores),
];

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    cal: &Calibration,
    kind: &str,
) -> anyhow::Result<()> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plotting: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let ms: Vec<&Measurement> = cal.measurements.iter().filter(|m| m.kind == kind).collect();
    let params = cal.kinds.get(kind).copied().unwrap_or_default();
    let mape = cal.fit.get(kind).map_or(f64::NAN, |f| f.heldout_mape);
    let title = format!("{kind}: measured (o) vs fitted (x) throughput, held-out MAPE {mape:.1}%");
    let root = root.titled(&title, ("sans-serif", 20)).map_err(err)?;
    let panels = root.split_evenly((1, 3));
    let y_max = ms
        .iter()
        .flat_map(|m| [m.throughput, params.throughput(&m.config)])
        .fold(1.0, f64::max)
        * 1.1;
    for (area, (label, x_of)) in panels.iter().zip(AXES) {
        let x_max = ms.iter().map(|m| x_of(m)).fold(1.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(label)
            .y_desc("samples/s")
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(err)?;
        let measured = ms.iter().map(|m| {
            let style = if m.point.heldout {
                BLUE.filled()
            } else {
                BLUE.stroke_width(1)
            };
            Circle::new((x_of(m), m.throughput), 4, style)
        });
        chart.draw_series(measured).map_err(err)?;
        let fitted = ms.iter().map(|m| {
            Cross::new(
                (x_of(m), params.throughput(&m.config)),
                4,
                RED.stroke_width(2),
            )
        });
        chart.draw_series(fitted).map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Writes `<stem>_<kind>.png` and `.svg` next to `out` for every kind; returns the paths.
pub fn write_plots(cal: &Calibration, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    let dir = out.parent().unwrap_or(Path::new("."));
    let stem = out
        .file_stem()
        .map_or("calibration".into(), |s| s.to_string_lossy().into_owned());
    let mut written = Vec::new();
    for kind in cal.kinds.keys() {
        let png = dir.join(format!("{stem}_{kind}.png"));
        draw(
            BitMapBackend::new(&png, (1500, 480)).into_drawing_area(),
            cal,
            kind,
        )?;
        let svg = dir.join(format!("{stem}_{kind}.svg"));
        draw(
            SVGBackend::new(&svg, (1500, 480)).into_drawing_area(),
            cal,
            kind,
        )?;
        written.extend([png, svg]);
    }
    Ok(written)
}
