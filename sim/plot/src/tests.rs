//! Tests of the chart helpers: files written, nothing drawn outside the axes (bitmap and
//! SVG), log axes, step functions and the legend.

use super::*;

fn spiky() -> Figure {
    // Like the report's "CPU cores in use": a sawtooth with sharp spikes, some above a
    // fixed y range, so both clipping and wide-stroke joins are exercised; and dots whose
    // discs cross the top edge.
    let points = (0..400)
        .map(|i| {
            (
                i as f64,
                if i % 7 == 0 {
                    120.0
                } else {
                    (i % 13) as f64 * 8.0
                },
            )
        })
        .collect();
    Figure {
        chart: Chart {
            title: "CPU cores in use over time".into(),
            x_label: "time (hours)".into(),
            y_label: "cores".into(),
            y_range: Some((0.0, 100.0)),
            ..Chart::default()
        },
        body: Body::Series(vec![
            Series {
                name: "static".into(),
                points,
                band: (0..400).map(|i| (i as f64, -10.0, 130.0)).collect(),
                ..Series::default()
            },
            // Dots on the border: their discs straddle the axes.
            Series {
                points: (0..40).map(|i| (i as f64 * 10.0, 100.0)).collect(),
                mark: Mark::Dots,
                ..Series::default()
            },
        ]),
    }
}

#[test]
fn writes_a_2x_png_an_svg_and_a_pdf_for_each_chart_kind() {
    let dir = std::env::temp_dir().join(format!("dlsim-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let chart = Chart {
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        ..Chart::default()
    };
    let s = [Series {
        name: "a".into(),
        points: vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)],
        ..Series::default()
    }];
    let bars = [("1".to_string(), 4.0), ("2-3".to_string(), 2.0)];
    let written = [
        line_chart(&dir.join("line"), &chart, &s).unwrap(),
        scatter(&dir.join("scatter"), &chart, &s).unwrap(),
        bar_chart(&dir.join("bars"), &chart, &bars).unwrap(),
        // Empty input still gives a (blank) figure rather than an error.
        line_chart(&dir.join("empty"), &chart, &[]).unwrap(),
    ];
    for [png, svg, pdf] in written {
        let bytes = std::fs::read(&png).unwrap();
        let dim = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!((dim(16), dim(20)), (SIZE.0 * 2, SIZE.1 * 2), "{png:?}");
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg"), "{svg:?}");
        let pdf = std::fs::read(&pdf).unwrap();
        assert!(pdf.starts_with(b"%PDF-1.4") && pdf.ends_with(b"%%EOF\n"));
        assert!(String::from_utf8_lossy(&pdf).contains("/MediaBox [0 0 720 450]"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_pixel_of_the_data_leaves_the_plot_area() {
    let strays = spiky().stray_pixels().unwrap();
    assert!(strays.inside > 10_000, "{strays:?}");
    assert_eq!(strays.outside, 0, "{strays:?}");
}

/// Every SVG element drawn in a palette colour (data, bands, legend swatches) has all
/// its coordinates inside the plot area.
pub fn assert_svg_inside(fig: &Figure) {
    let (svg, rect) = fig.svg().unwrap();
    let palette: Vec<String> = draw::PALETTE
        .iter()
        .map(|c| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2))
        .collect();
    let mut checked = 0;
    for element in svg.split('<').filter(|e| !e.starts_with("text")) {
        if !palette.iter().any(|c| element.contains(c.as_str())) {
            continue;
        }
        let attr = |name: &str| -> Option<String> {
            let at = element.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(element[at..].split('"').next()?.to_string())
        };
        let mut coords: Vec<(f64, f64)> = Vec::new();
        if let Some(points) = attr("points") {
            for pair in points.split_whitespace() {
                let (x, y) = pair.split_once(',').unwrap();
                coords.push((x.parse().unwrap(), y.parse().unwrap()));
            }
        }
        let num = |n: &str| attr(n).map(|v| v.parse::<f64>().unwrap());
        if let (Some(x), Some(y), Some(w), Some(h)) =
            (num("x"), num("y"), num("width"), num("height"))
        {
            coords.extend([(x, y), (x + w, y + h)]);
        }
        // A dot's centre is its datum; its disc may straddle an edge (painted over).
        if let (Some(x), Some(y)) = (num("cx"), num("cy")) {
            coords.push((x, y));
        }
        for (x, y) in coords {
            checked += 1;
            assert!(
                rect.contains(x, y),
                "({x}, {y}) outside {rect:?} in <{element}"
            );
        }
    }
    assert!(checked > 0, "no data element found in the SVG");
}

#[test]
fn svg_coordinates_of_the_data_stay_inside_the_plot_area() {
    assert_svg_inside(&spiky());
}

#[test]
fn log_axes_label_powers_of_ten_and_drop_non_positive_values() {
    let fig = Figure {
        chart: Chart {
            title: "t".into(),
            x_scale: Scale::Log,
            y_scale: Scale::Log,
            ..Chart::default()
        },
        body: Body::Series(vec![Series {
            points: vec![(0.0, 5.0), (0.01, 1.0), (10.0, 100.0), (1000.0, 10_000.0)],
            mark: Mark::Dots,
            ..Series::default()
        }]),
    };
    let p = draw::prepare(&fig);
    assert!(p.rect.x.0 < -2.0 && p.rect.x.1 > 3.0, "{:?}", p.rect);
    let draw::Layer::Dots { points, .. } = &p.layers[0] else {
        panic!("{:?}", p.layers)
    };
    assert_eq!(points, &[(-2.0, 0.0), (1.0, 2.0), (3.0, 4.0)]);
    let (svg, _) = fig.svg().unwrap();
    let labels: Vec<&str> = svg
        .split('<')
        .filter(|e| e.starts_with("text"))
        .filter_map(|e| Some(e.split_once('>')?.1.trim()))
        .collect();
    for label in ["0.01", "0.1", "1", "10", "100", "1000", "10000"] {
        assert!(labels.contains(&label), "{label} missing from {labels:?}");
    }
    assert_eq!(draw::tick(4.0, Scale::Log), "10000");
    assert_eq!(draw::tick(7.0, Scale::Log), "1e7");
    assert_eq!(draw::tick(2.5, Scale::Linear), "2.5");
    assert_eq!(draw::tick(4500.0, Scale::Linear), "4500");
}

#[test]
fn steps_hold_each_value_and_series_of_one_name_share_a_legend_entry() {
    let step = |name: &str, points: Vec<(f64, f64)>| Series {
        name: name.into(),
        points,
        colour: Some(1),
        mark: Mark::Step,
        ..Series::default()
    };
    let fig = Figure {
        chart: Chart::default(),
        body: Body::Series(vec![
            step("dlrover", vec![(0.0, 1.0), (2.0, 3.0), (3.0, 0.0)]),
            step("dlrover", vec![(5.0, 2.0), (6.0, 0.0)]),
        ]),
    };
    let p = draw::prepare(&fig);
    let draw::Layer::Line { runs, colour } = &p.layers[0] else {
        panic!("{:?}", p.layers)
    };
    assert_eq!(*colour, 1);
    assert_eq!(
        runs[0],
        [(0.0, 1.0), (2.0, 1.0), (2.0, 3.0), (3.0, 3.0), (3.0, 0.0)]
    );
    assert_eq!(p.legend, [("dlrover".to_string(), 1)]);
}

#[test]
fn long_bar_labels_stand_upright_and_short_ones_lie_flat() {
    let bars = |n: usize, label: &str| Figure {
        chart: Chart::default(),
        body: Body::Bars((0..n).map(|i| (format!("{label} {i}"), i as f64)).collect()),
    };
    let long = bars(10, "dlrover-oss: scheduling");
    assert_eq!(draw::rotated_bar_labels(&draw::prepare(&long)), Some(25));
    assert_eq!(
        draw::rotated_bar_labels(&draw::prepare(&bars(3, "1-2"))),
        None
    );
    let strays = long.stray_pixels().unwrap();
    assert!(strays.inside > 0 && strays.outside == 0, "{strays:?}");
    // Every label is drawn once, as text, below the axis (none as a tick label).
    let (svg, rect) = long.svg().unwrap();
    let rotated: Vec<&str> = svg
        .split("<text")
        .filter(|t| t.contains("rotate(270"))
        .filter(|t| {
            !t.split_once('>')
                .unwrap()
                .1
                .split("</text")
                .next()
                .unwrap()
                .trim()
                .is_empty()
        })
        .collect();
    assert_eq!(
        rotated.len(),
        10,
        "each label once (the chart has no y title)"
    );
    for t in rotated.iter().filter(|t| t.contains("dlrover-oss")) {
        let y: f64 = t
            .split("y=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            y > rect.y.1 as f64,
            "label at y {y} inside the plot area {rect:?}"
        );
    }
}

/// Dark pixels of the 2x bitmap in columns `xs`, rows above the plot area (the title's band).
fn dark_in_title_band(fig: &Figure, xs: std::ops::Range<usize>) -> usize {
    let (buf, rect) = fig.bitmap(true).unwrap();
    let w = (SIZE.0 * PNG_SCALE) as usize;
    let top = rect.y.0.max(0) as usize;
    (0..top)
        .flat_map(|y| xs.clone().map(move |x| (y * w + x) * 3))
        .filter(|&i| buf[i..i + 3].iter().all(|&c| c < 128))
        .count()
}

#[test]
fn a_title_wider_than_the_figure_is_shrunk_or_wrapped_not_cut() {
    let w = (SIZE.0 * PNG_SCALE) as usize;
    let edges = |fig: &Figure| dark_in_title_band(fig, 0..6) + dark_in_title_band(fig, w - 6..w);
    for words in [14, 40] {
        let mut fig = spiky();
        fig.chart.title = vec!["throughput"; words].join(" ");
        assert_eq!(edges(&fig), 0, "{words} words reach the figure's edges");
        assert!(
            dark_in_title_band(&fig, 0..w) > 1_000,
            "{words} words: the title is drawn"
        );
    }
    // A short title is drawn as it always was, at full size and centred.
    assert_eq!(edges(&spiky()), 0);
}
