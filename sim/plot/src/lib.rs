//! Chart helpers over plotters for paper-grade figures: lines, step functions, bands
//! (e.g. the spread over seeds), dots and bars, on linear or log axes, each figure written
//! as a 2x PNG, an SVG and a vector PDF.
//!
//! - [`Figure`] is what to draw (a [`Chart`] and a [`Body`]); [`Figure::write`] writes the
//!   three files, [`Figure::stray_pixels`] checks that nothing is drawn outside its axes.
//! - `draw.rs` lays out and draws one figure on any plotters backend; `clip.rs` clips the
//!   geometry to the plot rectangle; `pdf.rs` is the PDF backend.
//!
//! Text is drawn with an embedded DejaVu Sans (`assets/`, licence beside it), registered
//! once as `sans-serif`, so figures look the same on machines without system fonts. Every
//! file is written atomically: drawn to a temporary name in the same folder, then renamed,
//! so a reader never sees half a figure.

mod clip;
mod draw;
pub mod pdf;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use clip::Rect;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Figure size in SVG user units and PDF points (x 0.75); the PNG is [`PNG_SCALE`] times
/// larger in pixels, with every font, stroke and margin scaled alike.
pub const SIZE: (u32, u32) = (960, 600);

/// How many PNG pixels per SVG unit.
pub const PNG_SCALE: u32 = 2;

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

/// An axis scale. A log axis drops values <= 0 (a line breaks there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

/// Which corner of the plot area the legend sits in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Legend {
    #[default]
    UpperRight,
    UpperLeft,
    LowerRight,
}

/// Title, axis labels and axes of one chart.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Fixed axis ranges (data units); by default the data's range with a little headroom
    /// (and from 0 on a linear y axis). Whatever falls outside is clipped.
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
    pub legend: Legend,
}

/// How a series' points are joined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mark {
    /// Straight lines between points.
    #[default]
    Line,
    /// A step function: each y holds until the next point's x.
    Step,
    /// Unjoined dots.
    Dots,
}

/// One named series of (x, y) points, with an optional band (x, low, high) shaded behind
/// it in the same colour.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Legend label; empty for none. Series with the same name share one legend entry.
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub band: Vec<(f64, f64, f64)>,
    /// Palette index; by default the series' position.
    pub colour: Option<usize>,
    pub mark: Mark,
}

/// What a chart shows.
#[derive(Clone, Debug)]
pub enum Body {
    Series(Vec<Series>),
    /// One bar per `(label, value)`, in order (a histogram when the labels are bins).
    Bars(Vec<(String, f64)>),
}

/// One figure: what to draw and how.
#[derive(Clone, Debug)]
pub struct Figure {
    pub chart: Chart,
    pub body: Body,
}

/// The plot area in backend pixels, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelRect {
    pub x: (i32, i32),
    pub y: (i32, i32),
}

impl PixelRect {
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.x.0 as f64 && x <= self.x.1 as f64 && y >= self.y.0 as f64 && y <= self.y.1 as f64
    }
}

/// How many pixels the data layers changed, inside and outside the plot area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strays {
    pub inside: usize,
    pub outside: usize,
}

impl Figure {
    /// Writes `<prefix>.png` (at [`PNG_SCALE`]x), `<prefix>.svg` and `<prefix>.pdf`.
    pub fn write(&self, prefix: &Path) -> Result<[PathBuf; 3], PlotError> {
        register_embedded_font()?;
        let png = with_suffix(prefix, ".png");
        // plotters opens the PNG itself; a drawing error is kept apart from I/O ones.
        let mut drawn = Ok(());
        dlsim_fsio::write_atomic_via(&png, |tmp| {
            let size = (SIZE.0 * PNG_SCALE, SIZE.1 * PNG_SCALE);
            let root = BitMapBackend::new(tmp, size).into_drawing_area();
            drawn = draw::draw(root, self, PNG_SCALE as f64, true).map(|_| ());
            drawn.clone().map_err(std::io::Error::other)
        })
        .map_err(|e| match drawn {
            Err(d) => PlotError::Draw(png.clone(), d),
            Ok(()) => PlotError::Io(png.clone(), e),
        })?;
        let svg = with_suffix(prefix, ".svg");
        let (text, _) = self.svg().map_err(|e| match e {
            PlotError::Draw(_, e) => PlotError::Draw(svg.clone(), e),
            e => e,
        })?;
        write_file(&svg, text.as_bytes())?;
        let pdf = with_suffix(prefix, ".pdf");
        // Drawn at the PNG's scale and shrunk to points, for sub-point precision.
        let mut bytes = Vec::new();
        {
            let backend = pdf::PdfBackend::new(
                (SIZE.0 * PNG_SCALE, SIZE.1 * PNG_SCALE),
                0.75 / PNG_SCALE as f64,
                &mut bytes,
            );
            draw::draw(backend.into_drawing_area(), self, PNG_SCALE as f64, true)
                .map_err(|e| PlotError::Draw(pdf.clone(), e))?;
        }
        write_file(&pdf, &bytes)?;
        Ok([png, svg, pdf])
    }

    /// The figure as SVG text, and its plot area in SVG units.
    pub fn svg(&self) -> Result<(String, PixelRect), PlotError> {
        register_embedded_font()?;
        let mut text = String::new();
        let rect = {
            let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
            draw::draw(root, self, 1.0, true).map_err(|e| PlotError::Draw("<svg>".into(), e))?
        };
        Ok((text, rect))
    }

    /// Renders the figure as a 2x bitmap in memory twice, with and without its data
    /// (same axes, legend and title), and counts the pixels the data changed inside and
    /// outside the plot area. A figure that keeps to its axes has `outside == 0`.
    pub fn stray_pixels(&self) -> Result<Strays, PlotError> {
        let (with, rect) = self.bitmap(true)?;
        let (without, _) = self.bitmap(false)?;
        let w = (SIZE.0 * PNG_SCALE) as usize;
        let mut strays = Strays {
            inside: 0,
            outside: 0,
        };
        for (i, (a, b)) in with.chunks(3).zip(without.chunks(3)).enumerate() {
            if a != b {
                let (x, y) = ((i % w) as f64, (i / w) as f64);
                if rect.contains(x, y) {
                    strays.inside += 1;
                } else {
                    strays.outside += 1;
                }
            }
        }
        Ok(strays)
    }

    /// The 2x bitmap (RGB) and its plot area.
    pub fn bitmap(&self, data: bool) -> Result<(Vec<u8>, PixelRect), PlotError> {
        register_embedded_font()?;
        let size = (SIZE.0 * PNG_SCALE, SIZE.1 * PNG_SCALE);
        let mut buf = vec![0u8; (size.0 * size.1 * 3) as usize];
        let rect = {
            let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
            draw::draw(root, self, PNG_SCALE as f64, data)
                .map_err(|e| PlotError::Draw("<bitmap>".into(), e))?
        };
        Ok((buf, rect))
    }
}

/// Draws `series` by their marks; writes `<prefix>.png`, `.svg` and `.pdf`.
pub fn line_chart(
    prefix: &Path,
    chart: &Chart,
    series: &[Series],
) -> Result<[PathBuf; 3], PlotError> {
    Figure {
        chart: chart.clone(),
        body: Body::Series(series.to_vec()),
    }
    .write(prefix)
}

/// Draws `series` as dots; writes `<prefix>.png`, `.svg` and `.pdf`.
pub fn scatter(prefix: &Path, chart: &Chart, series: &[Series]) -> Result<[PathBuf; 3], PlotError> {
    let dots = series
        .iter()
        .map(|s| Series {
            mark: Mark::Dots,
            ..s.clone()
        })
        .collect();
    Figure {
        chart: chart.clone(),
        body: Body::Series(dots),
    }
    .write(prefix)
}

/// Draws one bar per `(label, value)` in order; writes `<prefix>.png`, `.svg` and `.pdf`.
pub fn bar_chart(
    prefix: &Path,
    chart: &Chart,
    bars: &[(String, f64)],
) -> Result<[PathBuf; 3], PlotError> {
    Figure {
        chart: chart.clone(),
        body: Body::Bars(bars.to_vec()),
    }
    .write(prefix)
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// `dlsim_fsio::write_atomic`, its error as a [`PlotError`].
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    dlsim_fsio::write_atomic(path, bytes).map_err(|e| PlotError::Io(path.to_path_buf(), e))
}

#[cfg(test)]
mod tests;
