//! Small, reusable chart helpers over plotters: a line chart, a bar chart (histograms) and a
//! scatter plot, each written as PNG and SVG.
//!
//! Text is drawn with an embedded DejaVu Sans (`assets/`, licence beside it), registered
//! once as `sans-serif`, so figures look the same on machines without system fonts. Every
//! file is written atomically: drawn to a temporary name in the same folder, then renamed,
//! so a reader never sees half a figure.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Figure size in pixels (PNG) and user units (SVG).
pub const SIZE: (u32, u32) = (900, 520);

/// Colours series are drawn in, in order.
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(127, 127, 127),
];

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("the embedded font is invalid")]
    Font,
    #[error("drawing {0}: {1}")]
    Draw(PathBuf, String),
    #[error("writing {0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// Registers the embedded font as `sans-serif` (once per process).
pub fn register_embedded_font() -> Result<(), PlotError> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

/// Title and axis labels of one chart.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
}

/// One named series of (x, y) points.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// What to draw; each variant is one of the helpers below.
enum Body<'a> {
    Lines(&'a [Series]),
    Points(&'a [Series]),
    Bars(&'a [(String, f64)]),
}

/// Draws `series` as lines; writes `<prefix>.png` and `<prefix>.svg`.
pub fn line_chart(
    prefix: &Path,
    chart: &Chart,
    series: &[Series],
) -> Result<[PathBuf; 2], PlotError> {
    write_both(prefix, chart, &Body::Lines(series))
}

/// Draws `series` as dots; writes `<prefix>.png` and `<prefix>.svg`.
pub fn scatter(prefix: &Path, chart: &Chart, series: &[Series]) -> Result<[PathBuf; 2], PlotError> {
    write_both(prefix, chart, &Body::Points(series))
}

/// Draws one bar per `(label, value)` in order (a histogram when the labels are bins);
/// writes `<prefix>.png` and `<prefix>.svg`.
pub fn bar_chart(
    prefix: &Path,
    chart: &Chart,
    bars: &[(String, f64)],
) -> Result<[PathBuf; 2], PlotError> {
    write_both(prefix, chart, &Body::Bars(bars))
}

fn write_both(prefix: &Path, chart: &Chart, body: &Body) -> Result<[PathBuf; 2], PlotError> {
    register_embedded_font()?;
    let png = with_suffix(prefix, ".png");
    let png_tmp = with_suffix(prefix, ".tmp.png");
    {
        let root = BitMapBackend::new(&png_tmp, SIZE).into_drawing_area();
        draw(root, chart, body).map_err(|e| PlotError::Draw(png.clone(), e))?;
    }
    std::fs::rename(&png_tmp, &png).map_err(|e| PlotError::Io(png.clone(), e))?;
    let svg = with_suffix(prefix, ".svg");
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
        draw(root, chart, body).map_err(|e| PlotError::Draw(svg.clone(), e))?;
    }
    let svg_tmp = with_suffix(prefix, ".svg.tmp");
    std::fs::write(&svg_tmp, text).map_err(|e| PlotError::Io(svg.clone(), e))?;
    std::fs::rename(&svg_tmp, &svg).map_err(|e| PlotError::Io(svg.clone(), e))?;
    Ok([png, svg])
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Axis range covering `values` with 5% headroom; never empty.
fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-9);
    if hi - lo < 1e-9 {
        return (lo - 1.0)..(hi + 1.0);
    }
    (if from_zero && lo >= 0.0 { lo } else { lo - pad })..(hi + pad)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    chart: &Chart,
    body: &Body,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
    root.fill(&WHITE).map_err(err)?;
    let (xs, ys): (Vec<f64>, Vec<f64>) = match body {
        Body::Lines(s) | Body::Points(s) => s.iter().flat_map(|s| s.points.iter().copied()).unzip(),
        Body::Bars(b) => (
            vec![-0.5, b.len() as f64 - 0.5],
            b.iter().map(|(_, v)| *v).collect(),
        ),
    };
    let is_bars = matches!(body, Body::Bars(_));
    let x_range = if is_bars {
        -0.5..(xs[1].max(0.5))
    } else {
        range(xs.into_iter(), false)
    };
    let mut cc = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range, range(ys.into_iter(), true))
        .map_err(err)?;
    let mut mesh = cc.configure_mesh();
    mesh.x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .label_style(("sans-serif", 13));
    let labels: Vec<String> = match body {
        Body::Bars(b) => b.iter().map(|(l, _)| l.clone()).collect(),
        _ => Vec::new(),
    };
    let bar_label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            labels.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    if is_bars {
        mesh.x_labels(labels.len().min(24) + 1)
            .x_label_formatter(&bar_label)
            .disable_x_mesh();
    }
    mesh.draw().map_err(err)?;
    match body {
        Body::Lines(series) | Body::Points(series) => {
            let lines = matches!(body, Body::Lines(_));
            for (i, s) in series.iter().enumerate() {
                let colour = PALETTE[i % PALETTE.len()];
                let drawn = if lines {
                    cc.draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        colour.stroke_width(2),
                    ))
                    .map_err(err)?
                } else {
                    cc.draw_series(
                        s.points
                            .iter()
                            .map(|&p| Circle::new(p, 2, colour.mix(0.5).filled())),
                    )
                    .map_err(err)?
                };
                if !s.name.is_empty() {
                    drawn.label(s.name.as_str()).legend(move |(x, y)| {
                        Rectangle::new([(x, y - 4), (x + 14, y + 4)], colour.filled())
                    });
                }
            }
            if series.iter().any(|s| !s.name.is_empty()) {
                cc.configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .label_font(("sans-serif", 13))
                    .draw()
                    .map_err(err)?;
            }
        }
        Body::Bars(bars) => {
            let colour = PALETTE[0];
            cc.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                let x = i as f64;
                Rectangle::new([(x - 0.4, 0.0), (x + 0.4, *v)], colour.filled())
            }))
            .map_err(err)?;
        }
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_png_and_svg_for_each_chart_kind() {
        let dir = std::env::temp_dir().join(format!("dlsim-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
        };
        let s = [Series {
            name: "a".into(),
            points: vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)],
        }];
        let bars = [("1".to_string(), 4.0), ("2-3".to_string(), 2.0)];
        let written = [
            line_chart(&dir.join("line"), &chart, &s).unwrap(),
            scatter(&dir.join("scatter"), &chart, &s).unwrap(),
            bar_chart(&dir.join("bars"), &chart, &bars).unwrap(),
            // Empty input still gives a (blank) figure rather than an error.
            line_chart(&dir.join("empty"), &chart, &[]).unwrap(),
        ];
        for [png, svg] in written {
            assert!(std::fs::metadata(&png).unwrap().len() > 1_000, "{png:?}");
            let text = std::fs::read_to_string(&svg).unwrap();
            assert!(text.starts_with("<svg"), "{svg:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
