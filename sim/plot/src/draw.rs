//! Laying out and drawing one [`Figure`] on any plotters backend (bitmap, SVG, PDF).
//!
//! `prepare` is pure: it moves data to axis space (log10 on a log axis), expands step
//! functions, builds band polygons, picks the axis ranges and clips everything to them.
//! `draw` then paints in an order that keeps every mark inside the axes: grid, data, white
//! over everything outside the plot area (a wide bitmap stroke still overshoots a sharp
//! spike by a few pixels), then axes, tick labels, legend and title on top. `k` scales
//! fonts, strokes and margins (2 for the 2x PNG, 1 for the SVG).

use crate::clip::{self, Rect};
use crate::{Body, Figure, Legend, Mark, PixelRect, Scale};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontTransform;

/// Colours series are drawn in, in order (Tableau 10, whose first colours read apart in
/// print and for common colour blindness).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Font sizes at 1x.
const TITLE_PT: f64 = 28.0;
const DESC_PT: f64 = 22.0;
const LABEL_PT: f64 = 19.0;
const LEGEND_PT: f64 = 18.0;

/// One thing to draw, in axis space, already clipped.
#[derive(Debug)]
pub enum Layer {
    Band {
        colour: usize,
        polygon: Vec<(f64, f64)>,
    },
    Line {
        colour: usize,
        runs: Vec<Vec<(f64, f64)>>,
    },
    Dots {
        colour: usize,
        points: Vec<(f64, f64)>,
    },
    Bars(Vec<[(f64, f64); 2]>),
}

/// A figure laid out: axis ranges (axis space), layers, legend entries (name, colour).
#[derive(Debug)]
pub struct Prepared {
    pub rect: Rect,
    pub layers: Vec<Layer>,
    pub legend: Vec<(String, usize)>,
    pub bar_labels: Vec<String>,
}

fn to_axis(v: f64, s: Scale) -> f64 {
    match s {
        Scale::Linear => v,
        Scale::Log if v > 0.0 => v.log10(),
        Scale::Log => f64::NAN,
    }
}

/// A step function's corners: each y holds until the next x.
fn steps<T: Copy>(points: &[(f64, T)]) -> Vec<(f64, T)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for w in points.windows(2) {
        out.push(w[0]);
        out.push((w[1].0, w[0].1));
    }
    out.extend(points.last());
    out
}

/// Axis range covering `values` with headroom; never empty.
fn range(values: &[f64], from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    if hi - lo < 1e-9 {
        return (lo - 1.0, hi + 1.0);
    }
    let pad = (hi - lo) * 0.04;
    (if from_zero && lo >= 0.0 { lo } else { lo - pad }, hi + pad)
}

pub fn prepare(fig: &Figure) -> Prepared {
    let c = &fig.chart;
    let fixed = |r: Option<(f64, f64)>, s: Scale| r.map(|(a, b)| (to_axis(a, s), to_axis(b, s)));
    match &fig.body {
        Body::Bars(bars) => {
            let values: Vec<f64> = bars.iter().map(|b| b.1).collect();
            let y = fixed(c.y_range, Scale::Linear).unwrap_or_else(|| range(&values, true));
            let rect = Rect {
                x: (-0.5, (bars.len() as f64 - 0.5).max(0.5)),
                y,
            };
            let clamp = |v: f64| v.clamp(rect.y.0, rect.y.1);
            let rects = bars
                .iter()
                .enumerate()
                .map(|(i, (_, v))| {
                    let x = i as f64;
                    [(x - 0.4, clamp(0.0)), (x + 0.4, clamp(*v))]
                })
                .collect();
            Prepared {
                rect,
                layers: vec![Layer::Bars(rects)],
                legend: Vec::new(),
                bar_labels: bars.iter().map(|b| b.0.clone()).collect(),
            }
        }
        Body::Series(series) => {
            let ax = |(x, y): (f64, f64)| (to_axis(x, c.x_scale), to_axis(y, c.y_scale));
            let mut shapes = Vec::new();
            for (i, s) in series.iter().enumerate() {
                let colour = s.colour.unwrap_or(i);
                let (points, band) = if s.mark == Mark::Step {
                    (
                        steps(&s.points),
                        steps(&s.band.iter().map(|b| (b.0, (b.1, b.2))).collect::<Vec<_>>()),
                    )
                } else {
                    (
                        s.points.clone(),
                        s.band.iter().map(|b| (b.0, (b.1, b.2))).collect(),
                    )
                };
                let mut polygon: Vec<(f64, f64)> =
                    band.iter().map(|&(x, (_, hi))| ax((x, hi))).collect();
                polygon.extend(band.iter().rev().map(|&(x, (lo, _))| ax((x, lo))));
                polygon.retain(|p| p.0.is_finite() && p.1.is_finite());
                let points: Vec<(f64, f64)> = points.into_iter().map(ax).collect();
                shapes.push((colour, s.mark, polygon, points));
            }
            let xs: Vec<f64> = shapes
                .iter()
                .flat_map(|s| s.2.iter().chain(&s.3).map(|p| p.0))
                .collect();
            let ys: Vec<f64> = shapes
                .iter()
                .flat_map(|s| s.2.iter().chain(&s.3).map(|p| p.1))
                .collect();
            let rect = Rect {
                x: fixed(c.x_range, c.x_scale).unwrap_or_else(|| range(&xs, false)),
                y: fixed(c.y_range, c.y_scale)
                    .unwrap_or_else(|| range(&ys, c.y_scale == Scale::Linear)),
            };
            let mut layers = Vec::new();
            // Bands first, so every line is drawn over every band.
            for (colour, _, polygon, _) in &shapes {
                let polygon = clip::polygon(polygon, &rect);
                if !polygon.is_empty() {
                    layers.push(Layer::Band {
                        colour: *colour,
                        polygon,
                    });
                }
            }
            for (colour, mark, _, points) in shapes {
                layers.push(match mark {
                    Mark::Dots => Layer::Dots {
                        colour,
                        points: points.into_iter().filter(|p| rect.contains(*p)).collect(),
                    },
                    Mark::Line | Mark::Step => Layer::Line {
                        colour,
                        runs: clip::polyline(&points, &rect),
                    },
                });
            }
            let mut legend: Vec<(String, usize)> = Vec::new();
            for (i, s) in series.iter().enumerate() {
                if !s.name.is_empty() && !legend.iter().any(|(n, _)| *n == s.name) {
                    legend.push((s.name.clone(), s.colour.unwrap_or(i)));
                }
            }
            Prepared {
                rect,
                layers,
                legend,
                bar_labels: Vec::new(),
            }
        }
    }
}

/// A tick label: a log axis shows 10^v; numbers lose trailing zeros.
pub fn tick(v: f64, s: Scale) -> String {
    let v = match s {
        Scale::Linear => v,
        Scale::Log => 10f64.powf(v),
    };
    if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        return format!("{v:.0e}");
    }
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// Labels to ask for: one per decade on a log axis (so they fall on powers of ten).
fn label_count(span: f64, s: Scale, linear: usize) -> usize {
    match s {
        Scale::Linear => linear,
        Scale::Log => (span.floor() as usize + 1).clamp(2, 10),
    }
}

type TickFormat<'a> = dyn Fn(&f64) -> String + 'a;

type Ctx<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

pub fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    fig: &Figure,
    k: f64,
    data: bool,
) -> Result<PixelRect, String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
    let p = prepare(fig);
    let px = |v: f64| (v * k).round() as i32;
    root.fill(&WHITE).map_err(err)?;
    let (w, h) = root.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let (_, area) = root.split_vertically(px(50.0));
    // Long bar labels are drawn upright (reading upwards), below the axis.
    let x_label_area = match rotated_bar_labels(&p) {
        Some(chars) => 40.0 + LABEL_PT * 0.52 * chars as f64,
        None => 70.0,
    };
    let mut cc = ChartBuilder::on(&area)
        .margin(px(12.0))
        .margin_right(px(40.0))
        .x_label_area_size(px(x_label_area))
        .y_label_area_size(px(100.0))
        .build_cartesian_2d(p.rect.x.0..p.rect.x.1, p.rect.y.0..p.rect.y.1)
        .map_err(err)?;
    let (xr, yr) = cc.plotting_area().get_pixel_range();
    let rect = PixelRect {
        x: (xr.start, xr.end),
        y: (yr.start, yr.end),
    };
    mesh(&mut cc, fig, &p, k, true).map_err(err)?;
    minor_log_grid(&mut cc, fig, &p, k).map_err(err)?;
    if data {
        layers(&mut cc, &p, k).map_err(err)?;
    }
    let white = WHITE.filled();
    // Backends fill a rectangle up to, not including, its far corner.
    for r in [
        [(0, 0), (w, rect.y.0)],
        [(0, rect.y.1 + 1), (w + 1, h + 1)],
        [(0, 0), (rect.x.0, h + 1)],
        [(rect.x.1 + 1, 0), (w + 1, h + 1)],
    ] {
        root.draw(&Rectangle::new(r, white)).map_err(err)?;
    }
    mesh(&mut cc, fig, &p, k, false).map_err(err)?;
    if rotated_bar_labels(&p).is_some() {
        let style = ("sans-serif", LABEL_PT * k)
            .into_font()
            .transform(FontTransform::Rotate270)
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, label) in p.bar_labels.iter().enumerate() {
            let (x, y) = cc.backend_coord(&(i as f64, p.rect.y.0));
            root.draw_text(label, &style, (x, y + px(10.0)))
                .map_err(err)?;
        }
    }
    legend(&root, &p, rect, fig.chart.legend, k).map_err(err)?;
    title(&root, &fig.chart.title, w, k).map_err(err)?;
    root.present().map_err(err)?;
    Ok(rect)
}

/// Draws the title centred at the top. A title wider than the figure is shrunk to fit (to
/// at most 0.7 of its size); one still too wide is set at 0.6 of its size on up to two
/// lines, broken between words, and ends in an ellipsis where even two lines cannot hold
/// it: no title is cut at the figure's edges.
fn title<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    w: i32,
    k: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let style = |pt: f64| {
        ("sans-serif", pt)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top))
    };
    let avail = f64::from(w) * 0.96;
    let width = |line: &str, pt: f64| -> Result<f64, DrawingAreaErrorKind<DB::ErrorType>> {
        Ok(f64::from(root.estimate_text_size(line, &style(pt))?.0))
    };
    let full = TITLE_PT * k;
    let top = (14.0 * k).round() as i32;
    let natural = width(text, full)?;
    if natural <= avail {
        return root.draw_text(text, &style(full), (w / 2, top));
    }
    let shrunk = full * avail / natural;
    if shrunk >= 0.7 * full {
        return root.draw_text(text, &style(shrunk), (w / 2, top));
    }
    let pt = 0.6 * full;
    // Greedy wrap: each line takes words while it fits.
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if width(&format!("{line} {word}"), pt)? <= avail => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    if lines.len() > 2 {
        lines.truncate(2);
        let second = &mut lines[1];
        second.push('…');
        while width(second, pt)? > avail && second.chars().count() > 1 {
            second.pop();
            second.pop();
            second.push('…');
        }
    }
    let step = (pt * 1.2).round() as i32;
    for (i, line) in lines.iter().enumerate() {
        root.draw_text(line, &style(pt), (w / 2, top + step * i as i32))?;
    }
    Ok(())
}

/// The longest bar label, when the labels would not fit side by side.
pub fn rotated_bar_labels(p: &Prepared) -> Option<usize> {
    let longest = p.bar_labels.iter().map(|l| l.chars().count()).max()?;
    // About 0.62 em per character; the plot is ~800 units wide at 1x.
    let needed = longest as f64 * LABEL_PT * 0.62 * p.bar_labels.len() as f64;
    (needed > 700.0).then_some(longest)
}

/// The grid (first pass, under the data) or the axes, ticks and labels (second pass).
fn mesh<DB: DrawingBackend>(
    cc: &mut Ctx<'_, DB>,
    fig: &Figure,
    p: &Prepared,
    k: f64,
    grid: bool,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let c = &fig.chart;
    let bars = matches!(fig.body, Body::Bars(_));
    let upright = rotated_bar_labels(p).is_some();
    let x_fmt = |v: &f64| {
        if bars && upright {
            // Drawn by `bar_labels` instead.
            String::new()
        } else if bars {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                p.bar_labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        } else {
            tick(*v, c.x_scale)
        }
    };
    let y_fmt = |v: &f64| tick(*v, c.y_scale);
    // The grid pass writes no text: it would be painted over, but stay in an SVG or PDF.
    let blank = |_: &f64| String::new();
    let (x_fmt, y_fmt): (&TickFormat, &TickFormat) = if grid {
        (&blank, &blank)
    } else {
        (&x_fmt, &y_fmt)
    };
    let (x_desc, y_desc) = if grid {
        ("", "")
    } else {
        (c.x_label.as_str(), c.y_label.as_str())
    };
    let nx = if bars {
        p.bar_labels.len().min(24) + 1
    } else {
        label_count(p.rect.x.1 - p.rect.x.0, c.x_scale, 8)
    };
    let ny = label_count(p.rect.y.1 - p.rect.y.0, c.y_scale, 6);
    let mut m = cc.configure_mesh();
    m.x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(nx)
        .y_labels(ny)
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .label_style(("sans-serif", LABEL_PT * k))
        .axis_desc_style(("sans-serif", DESC_PT * k))
        .axis_style(BLACK.stroke_width(k as u32))
        .bold_line_style(BLACK.mix(0.12).stroke_width(k as u32))
        .light_line_style(BLACK.mix(0.04).stroke_width(k as u32))
        .set_all_tick_mark_size((5.0 * k) as u32);
    if c.x_scale == Scale::Log || bars {
        m.disable_x_mesh();
    }
    if c.y_scale == Scale::Log {
        m.disable_y_mesh();
    }
    if !grid {
        m.disable_mesh();
    }
    m.draw()
}

/// Grid lines at 1..9 x 10^k on log axes (plotters' own grid would fall between them).
fn minor_log_grid<DB: DrawingBackend>(
    cc: &mut Ctx<'_, DB>,
    fig: &Figure,
    p: &Prepared,
    k: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let lines = |(lo, hi): (f64, f64)| -> Vec<(f64, bool)> {
        let mut out = Vec::new();
        for decade in (lo.floor() as i32)..=(hi.ceil() as i32) {
            for m in 1..10 {
                let v = decade as f64 + (m as f64).log10();
                if v >= lo && v <= hi {
                    out.push((v, m == 1));
                }
            }
        }
        out
    };
    let style = |major: bool| {
        BLACK
            .mix(if major { 0.15 } else { 0.05 })
            .stroke_width(k as u32)
    };
    let r = p.rect;
    if fig.chart.x_scale == Scale::Log {
        for (x, major) in lines(r.x) {
            cc.draw_series(std::iter::once(PathElement::new(
                vec![(x, r.y.0), (x, r.y.1)],
                style(major),
            )))?;
        }
    }
    if fig.chart.y_scale == Scale::Log {
        for (y, major) in lines(r.y) {
            cc.draw_series(std::iter::once(PathElement::new(
                vec![(r.x.0, y), (r.x.1, y)],
                style(major),
            )))?;
        }
    }
    Ok(())
}

fn layers<DB: DrawingBackend>(
    cc: &mut Ctx<'_, DB>,
    p: &Prepared,
    k: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let colour = |i: usize| PALETTE[i % PALETTE.len()];
    for layer in &p.layers {
        match layer {
            Layer::Band { colour: c, polygon } => {
                cc.draw_series(std::iter::once(Polygon::new(
                    polygon.clone(),
                    colour(*c).mix(0.2).filled(),
                )))?;
            }
            Layer::Line { colour: c, runs } => {
                for run in runs {
                    cc.draw_series(std::iter::once(PathElement::new(
                        run.clone(),
                        colour(*c).stroke_width((2.0 * k) as u32),
                    )))?;
                }
            }
            Layer::Dots { colour: c, points } => {
                let style = colour(*c).mix(0.5).filled();
                cc.draw_series(
                    points
                        .iter()
                        .map(|&pt| Circle::new(pt, (2.5 * k) as u32, style)),
                )?;
            }
            Layer::Bars(rects) => {
                let style = colour(0).filled();
                cc.draw_series(rects.iter().map(|r| Rectangle::new(*r, style)))?;
            }
        }
    }
    Ok(())
}

/// The legend, boxed, in a corner of the plot area.
fn legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p: &Prepared,
    rect: PixelRect,
    corner: Legend,
    k: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    if p.legend.is_empty() {
        return Ok(());
    }
    let font = ("sans-serif", LEGEND_PT * k).into_font().color(&BLACK);
    let px = |v: f64| (v * k).round() as i32;
    let mut text_w = 0;
    for (name, _) in &p.legend {
        let (tw, _) = root.estimate_text_size(name, &font)?;
        text_w = text_w.max(tw as i32);
    }
    let row = px(LEGEND_PT * 1.5);
    let (box_w, box_h) = (text_w + px(46.0), row * p.legend.len() as i32 + px(12.0));
    let inset = px(10.0);
    let x0 = match corner {
        Legend::UpperLeft => rect.x.0 + inset,
        Legend::UpperRight | Legend::LowerRight => rect.x.1 - inset - box_w,
    };
    let y0 = match corner {
        Legend::UpperLeft | Legend::UpperRight => rect.y.0 + inset,
        Legend::LowerRight => rect.y.1 - inset - box_h,
    };
    root.draw(&Rectangle::new(
        [(x0, y0), (x0 + box_w, y0 + box_h)],
        WHITE.mix(0.9).filled(),
    ))?;
    root.draw(&Rectangle::new(
        [(x0, y0), (x0 + box_w, y0 + box_h)],
        BLACK.mix(0.5).stroke_width(k as u32),
    ))?;
    for (i, (name, c)) in p.legend.iter().enumerate() {
        let y = y0 + px(6.0) + row * i as i32 + row / 2;
        let colour = PALETTE[c % PALETTE.len()];
        root.draw(&PathElement::new(
            vec![(x0 + px(8.0), y), (x0 + px(34.0), y)],
            colour.stroke_width((3.0 * k) as u32),
        ))?;
        root.draw_text(
            name,
            &font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
            (x0 + px(40.0), y),
        )?;
    }
    Ok(())
}
