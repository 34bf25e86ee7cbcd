//! `report.html` in headless Chromium: every figure is shown, and no mark of any figure
//! lies outside its plot area as the browser lays it out (each data element's bounding box
//! against the plot area `report.html` marks on its SVG).
//!
//! Runs when `DLSIM_BROWSER_TEST=1` (CI sets it after `scripts/install-chromium.sh`);
//! otherwise it says so and passes, as a machine without Chromium cannot run it.

use crate::support::*;
use std::process::Command;

/// The check run inside the page: it appends `<pre id="dlsim-check">` with a verdict line.
const CHECK_JS: &str = r##"<script>
(function () {
  const palette = ["#1F77B4", "#D62728", "#2CA02C", "#FF7F0E", "#9467BD", "#8C564B", "#E377C2", "#17BECF"];
  // `#N` in the URL shrinks every plot area by N units: the test's negative control.
  const shrink = Number(location.hash.slice(1)) || 0;
  const problems = [];
  let checked = 0;
  const svgs = document.querySelectorAll("svg[data-plot-area]");
  svgs.forEach((svg, i) => {
    const [a0, b0, a1, b1] = svg.dataset.plotArea.split(" ").map(Number);
    const [x0, y0, x1, y1] = [a0 + shrink, b0 + shrink, a1 - shrink, b1 - shrink];
    const shown = svg.getBoundingClientRect();
    if (!(shown.width > 300 && shown.height > 150)) problems.push(`figure ${i} is not shown`);
    svg.querySelectorAll("polyline, polygon, rect, circle, path, line").forEach((el) => {
      const colours = [el.getAttribute("stroke"), el.getAttribute("fill")].map((c) => (c || "").toUpperCase());
      if (!colours.some((c) => palette.includes(c))) return;
      checked++;
      const b = el.getBBox();
      if (b.x < x0 - 1 || b.y < y0 - 1 || b.x + b.width > x1 + 1 || b.y + b.height > y1 + 1) {
        problems.push(`figure ${i}: <${el.tagName}> at ${b.x},${b.y} ${b.width}x${b.height} outside ${x0},${y0}-${x1},${y1}`);
      }
    });
  });
  const pre = document.createElement("pre");
  pre.id = "dlsim-check";
  pre.textContent = `DLSIM-CHECK figures=${svgs.length} checked=${checked} problems=${problems.length}\n${problems.join("\n")}`;
  document.body.appendChild(pre);
})();
</script>"##;

fn chromium() -> String {
    for name in ["chromium", "chromium-browser"] {
        if Command::new(name).arg("--version").output().is_ok() {
            return name.into();
        }
    }
    panic!("DLSIM_BROWSER_TEST=1 but no chromium on PATH (run scripts/install-chromium.sh)");
}

#[test]
fn report_html_shows_every_figure_inside_its_axes_in_chromium() {
    if std::env::var("DLSIM_BROWSER_TEST").as_deref() != Ok("1") {
        eprintln!("skipped: set DLSIM_BROWSER_TEST=1 (after scripts/install-chromium.sh)");
        return;
    }
    let dir = scratch("browser");
    let [a, b] = crate::report::two_tiny_runs(&dir, ["static", "slower"], true);
    crate::report::relabel_slower(&b, "slower");
    let out = dir.join("report");
    let o = dlsim(&[
        "report",
        path_str(&a),
        path_str(&b),
        "--out",
        path_str(&out),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let checked = out.join("checked.html");
    std::fs::write(
        &checked,
        html.replace("</body>", &format!("{CHECK_JS}</body>")),
    )
    .unwrap();
    let url = format!("file://{}", checked.canonicalize().unwrap().display());
    let browser = chromium();
    let headless = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
    ];
    let verdict = |url: &str| -> (usize, usize, usize, String) {
        let o = Command::new(&browser)
            .args(headless)
            .args(["--virtual-time-budget=5000", "--dump-dom", url])
            .output()
            .unwrap();
        let dom = String::from_utf8_lossy(&o.stdout);
        let at = dom
            .find("id=\"dlsim-check\">DLSIM-CHECK")
            .unwrap_or_else(|| panic!("no verdict: {}", String::from_utf8_lossy(&o.stderr)));
        let text = dom[at..].lines().take(20).collect::<Vec<_>>().join("\n");
        let num = |key: &str| -> usize {
            text.split(&format!("{key}="))
                .nth(1)
                .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap()
        };
        (num("figures"), num("checked"), num("problems"), text)
    };
    let (figures, marks, problems, text) = verdict(&url);
    assert_eq!((figures, problems), (5, 0), "{text}");
    assert!(marks >= 10, "{text}");
    // The check can fail: with every plot area 60 units smaller, marks fall outside.
    let (_, _, problems, text) = verdict(&format!("{url}#60"));
    assert!(problems > 0, "{text}");

    // And it renders: a screenshot of the page is a real image, not an empty one.
    let shot = dir.join("report.png");
    let o = Command::new(&browser)
        .args(headless)
        .args([
            "--window-size=1100,1400",
            &format!("--screenshot={}", shot.display()),
        ])
        .arg(format!(
            "file://{}",
            out.join("report.html").canonicalize().unwrap().display()
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 20_000,
        "screenshot too small"
    );
}
