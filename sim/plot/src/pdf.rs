//! A vector PDF backend for plotters, written here rather than taken from a crate:
//! plotters has no PDF backend, and the crates that convert SVG to PDF (`svg2pdf` with
//! `usvg`) or write PDFs with fonts (`printpdf`) bring tens of crates for what a chart
//! needs, which is lines, polygons, rectangles, circles and text.
//!
//! One page, one content stream. Text uses the PDF standard font Helvetica (every reader
//! has it, so nothing is embedded) and is placed by the embedded DejaVu Sans metrics that
//! plotters lays text out with, so anchors line up to within the two fonts' width
//! difference. Translucent fills (the seed bands) use one `ExtGState` per alpha value.
//! Coordinates arrive in backend pixels and are scaled by `scale` to points, so a figure
//! drawn at 2x (as for the PNG) keeps half-point precision.

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontTransform,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Debug)]
pub struct PdfError(String);

impl std::fmt::Display for PdfError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PdfError {}

/// Draws into memory; `present` (which plotters calls at the end of a drawing) puts the
/// file's bytes into the buffer it was made with.
pub struct PdfBackend<'a> {
    out: &'a mut Vec<u8>,
    size: (u32, u32),
    scale: f64,
    ops: String,
    /// Alpha (in thousandths) -> graphics state name, in a stable order.
    alphas: BTreeMap<u32, String>,
}

type Res = Result<(), DrawingErrorKind<PdfError>>;

impl<'a> PdfBackend<'a> {
    /// A page of `size` backend pixels, each `scale` points wide, written into `out`.
    pub fn new(size: (u32, u32), scale: f64, out: &'a mut Vec<u8>) -> PdfBackend<'a> {
        PdfBackend {
            out,
            size,
            scale,
            ops: String::new(),
            alphas: BTreeMap::new(),
        }
    }

    fn xy(&self, (x, y): BackendCoord) -> (f64, f64) {
        (x as f64, self.size.1 as f64 - y as f64)
    }

    /// Sets fill or stroke colour and alpha; false when the colour is fully transparent.
    fn colour(&mut self, c: BackendColor, stroke: bool) -> bool {
        if c.alpha <= 0.0 {
            return false;
        }
        let (r, g, b) = c.rgb;
        let op = if stroke { "RG" } else { "rg" };
        let milli = (c.alpha.min(1.0) * 1000.0).round() as u32;
        let n = self.alphas.len();
        let gs = self
            .alphas
            .entry(milli)
            .or_insert_with(|| format!("GS{n}"))
            .clone();
        let _ = writeln!(
            self.ops,
            "/{gs} gs {} {} {} {op}",
            unit(r as f64 / 255.0),
            unit(g as f64 / 255.0),
            unit(b as f64 / 255.0)
        );
        true
    }

    fn path(&mut self, points: &[BackendCoord]) {
        for (i, p) in points.iter().enumerate() {
            let (x, y) = self.xy(*p);
            let _ = writeln!(self.ops, "{x} {y} {}", if i == 0 { "m" } else { "l" });
        }
    }

    /// The file: header, objects, cross-reference table and trailer.
    pub fn finish(&self) -> Vec<u8> {
        let (w, h) = (
            unit(self.size.0 as f64 * self.scale),
            unit(self.size.1 as f64 * self.scale),
        );
        let content = format!("q {} 0 0 {0} 0 0 cm\n{}Q\n", unit(self.scale), self.ops);
        let mut states = String::new();
        for (milli, name) in &self.alphas {
            let a = unit(*milli as f64 / 1000.0);
            let _ = write!(states, "/{name} << /ca {a} /CA {a} >> ");
        }
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Contents 4 0 R \
                 /Resources << /Font << /F1 5 0 R >> /ExtGState << {states}>> >> >>"
            ),
            format!(
                "<< /Length {} >>\nstream\n{content}endstream",
                content.len()
            ),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
                .to_string(),
        ];
        let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
        let mut offsets = Vec::new();
        for (i, body) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
        }
        let xref = out.len();
        let mut tail = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
        for o in offsets {
            let _ = writeln!(tail, "{o:010} 00000 n ");
        }
        let _ = write!(
            tail,
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        );
        out.extend_from_slice(tail.as_bytes());
        out
    }
}

/// A number with at most three decimals and no trailing zeros.
fn unit(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// A PDF string literal in WinAnsi encoding (ASCII kept, a few common symbols mapped,
/// anything else shown as `?`).
fn literal(text: &str) -> String {
    let mut out = String::from("(");
    for c in text.chars() {
        match c {
            '(' | ')' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => {
                let code: u8 = match c {
                    '–' => 0x96,
                    '—' => 0x97,
                    '±' => 0xb1,
                    '×' => 0xd7,
                    '°' => 0xb0,
                    'µ' => 0xb5,
                    _ => b'?',
                };
                let _ = write!(out, "\\{code:03o}");
            }
        }
    }
    out.push(')');
    out
}

impl DrawingBackend for PdfBackend<'_> {
    type ErrorType = PdfError;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> Res {
        Ok(())
    }

    fn present(&mut self) -> Res {
        *self.out = self.finish();
        Ok(())
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Res {
        if self.colour(color, false) {
            let (x, y) = self.xy(point);
            let _ = writeln!(self.ops, "{x} {} 1 1 re f", y - 1.0);
        }
        Ok(())
    }

    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, s: &S) -> Res {
        self.draw_path([from, to], s)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        s: &S,
        fill: bool,
    ) -> Res {
        if self.colour(s.color(), !fill) {
            let (x0, y0) = self.xy(upper_left);
            let (x1, y1) = self.xy(bottom_right);
            let op = if fill {
                "f".to_string()
            } else {
                format!("{} w S", s.stroke_width())
            };
            let _ = writeln!(self.ops, "{x0} {y1} {} {} re {op}", x1 - x0, y0 - y1);
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        s: &S,
    ) -> Res {
        let points: Vec<BackendCoord> = path.into_iter().collect();
        if points.len() >= 2 && self.colour(s.color(), true) {
            let _ = writeln!(self.ops, "{} w 1 j 1 J", s.stroke_width());
            self.path(&points);
            self.ops.push_str("S\n");
        }
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        s: &S,
        fill: bool,
    ) -> Res {
        if self.colour(s.color(), !fill) {
            // Four cubic Beziers, control points at 0.5523 of the radius.
            let (cx, cy) = self.xy(center);
            let r = radius as f64;
            let k = 0.5523 * r;
            let _ = writeln!(
                self.ops,
                "{} {cy} m {} {} {} {} {cx} {} c {} {} {} {} {} {cy} c \
                 {} {} {} {} {cx} {} c {} {} {} {} {} {cy} c {}",
                cx + r,
                cx + r,
                cy + k,
                cx + k,
                cy + r,
                cy + r,
                cx - k,
                cy + r,
                cx - r,
                cy + k,
                cx - r,
                cx - r,
                cy - k,
                cx - k,
                cy - r,
                cy - r,
                cx + k,
                cy - r,
                cx + r,
                cy - k,
                cx + r,
                if fill {
                    "f".to_string()
                } else {
                    format!("{} w S", s.stroke_width())
                }
            );
        }
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        s: &S,
    ) -> Res {
        let points: Vec<BackendCoord> = vert.into_iter().collect();
        if points.len() >= 3 && self.colour(s.color(), false) {
            self.path(&points);
            self.ops.push_str("h f\n");
        }
        Ok(())
    }

    fn draw_text<T: BackendTextStyle>(&mut self, text: &str, style: &T, pos: BackendCoord) -> Res {
        let ((min_x, min_y), (max_x, max_y)) = style
            .layout_box(text)
            .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (w, h) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -w,
            HPos::Center => -w / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -h / 2,
            VPos::Bottom => -h,
        };
        let t = style.transform();
        // The baseline's start, as plotters' own rasteriser places it.
        let (ox, oy) = t.transform(dx - min_x, dy - min_y);
        let origin = self.xy((pos.0 + ox, pos.1 + oy));
        // Text direction and glyph "up", from screen (y down) to page (y up).
        let (a, b, c, d) = match t {
            FontTransform::None => (1, 0, 0, 1),
            FontTransform::Rotate90 => (0, -1, 1, 0),
            FontTransform::Rotate180 => (-1, 0, 0, -1),
            FontTransform::Rotate270 => (0, 1, -1, 0),
        };
        if self.colour(style.color(), false) {
            let _ = writeln!(
                self.ops,
                "BT /F1 {} Tf {a} {b} {c} {d} {} {} Tm {} Tj ET",
                unit(style.size()),
                unit(origin.0),
                unit(origin.1),
                literal(text)
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_reference_offsets_point_at_their_objects() {
        let mut bytes = Vec::new();
        let mut pdf = PdfBackend::new((100, 50), 0.5, &mut bytes);
        pdf.draw_line(
            (0, 0),
            (100, 50),
            &BackendColor {
                alpha: 1.0,
                rgb: (255, 0, 0),
            },
        )
        .unwrap();
        pdf.fill_polygon(
            [(0, 0), (10, 0), (10, 10)],
            &BackendColor {
                alpha: 0.25,
                rgb: (0, 0, 255),
            },
        )
        .unwrap();
        pdf.present().unwrap();
        drop(pdf);
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.starts_with("%PDF-1.4") && text.ends_with("%%EOF\n"));
        assert!(text.contains("/MediaBox [0 0 50 25]"), "{text}");
        assert!(text.contains("/GS1 << /ca 0.25 /CA 0.25 >>"), "{text}");
        let startxref: usize = text
            .rsplit("startxref\n")
            .next()
            .and_then(|t| t.lines().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        // Offsets count bytes (the header's binary comment is not UTF-8).
        let tail = std::str::from_utf8(&bytes[startxref..]).unwrap();
        assert!(tail.starts_with("xref\n0 6\n"), "{tail}");
        let offsets: Vec<usize> = tail
            .lines()
            .skip(3)
            .take(5)
            .map(|l| l[..10].parse().unwrap())
            .collect();
        for (i, o) in offsets.iter().enumerate() {
            assert!(
                bytes[*o..].starts_with(format!("{} 0 obj", i + 1).as_bytes()),
                "object {}",
                i + 1
            );
        }
        // The content stream's declared length is its real length.
        let start = text.find("stream\n").unwrap() + 7;
        let end = text.find("endstream").unwrap();
        let declared: usize = text[..start]
            .rsplit("/Length ")
            .next()
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(declared, end - start);
    }

    #[test]
    fn text_is_escaped_and_encoded() {
        assert_eq!(literal("a (b) \\ – é"), "(a \\(b\\) \\\\ \\226 \\077)");
    }
}
