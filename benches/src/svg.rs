//! Hand-written SVG charts: a line chart with min..max whiskers and a grouped bar chart with
//! whiskers, on a linear or logarithmic axis. No dependencies; every file stands alone.

use std::fmt::Write;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 520.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;

const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// One point of a line: `y` with a whisker from `lo` to `hi`.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    /// Position on the x axis.
    pub x: f64,
    /// The value drawn.
    pub y: f64,
    /// Bottom of the whisker.
    pub lo: f64,
    /// Top of the whisker.
    pub hi: f64,
}

/// A named line or bar series.
#[derive(Clone, Debug)]
pub struct Series<T> {
    /// Legend text.
    pub name: String,
    /// The values.
    pub values: Vec<T>,
}

/// One bar: `value`, with a whisker from `lo` to `hi` (equal to `value` for none).
#[derive(Clone, Copy, Debug)]
pub struct Bar {
    /// Height of the bar.
    pub value: f64,
    /// Bottom of the whisker.
    pub lo: f64,
    /// Top of the whisker.
    pub hi: f64,
}

/// The y axis: linear from 0, or logarithmic over whole decades.
struct Axis {
    log: bool,
    min: f64,
    max: f64,
}

impl Axis {
    fn new(log: bool, values: impl Iterator<Item = f64>) -> Axis {
        let values: Vec<f64> = values.filter(|v| v.is_finite() && *v > 0.0).collect();
        let hi = values.iter().copied().fold(f64::MIN, f64::max);
        let lo = values.iter().copied().fold(f64::MAX, f64::min);
        if values.is_empty() {
            return Axis {
                log,
                min: if log { 1.0 } else { 0.0 },
                max: 10.0,
            };
        }
        if log {
            Axis {
                log,
                min: 10f64.powf(lo.log10().floor()),
                max: 10f64.powf((hi.log10() + 1e-9).ceil()),
            }
        } else {
            Axis {
                log,
                min: 0.0,
                max: nice_ceiling(hi * 1.05),
            }
        }
    }

    /// Vertical position of `v`.
    fn y(&self, v: f64) -> f64 {
        let span = HEIGHT - TOP - BOTTOM;
        let frac = if self.log {
            let v = v.max(self.min);
            (v.log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
        } else {
            (v - self.min) / (self.max - self.min)
        };
        HEIGHT - BOTTOM - frac.clamp(0.0, 1.0) * span
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut t = Vec::new();
            let mut v = self.min;
            while v <= self.max * 1.000_001 {
                t.push(v);
                v *= 10.0;
            }
            t
        } else {
            let step = nice_ceiling(self.max / 6.0);
            (0..)
                .map(|i| f64::from(i) * step)
                .take_while(|&v| v <= self.max * 1.000_001)
                .collect()
        }
    }
}

/// The smallest of 1, 2, 2.5, 5 × 10^k at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let decade = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&c| c >= v * 0.999_999)
        .unwrap_or(10.0 * decade)
}

fn label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn frame(svg: &mut String, title: &str, y_label: &str, axis: &Axis) {
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="28" text-anchor="middle" font-size="16">{}</text>
"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        escape(title)
    );
    for tick in axis.ticks() {
        let y = axis.y(tick);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            label(tick)
        );
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b}" stroke="black"/><line x1="{LEFT}" y1="{b}" x2="{r}" y2="{b}" stroke="black"/>"##,
        b = HEIGHT - BOTTOM,
        r = WIDTH - RIGHT
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (TOP + HEIGHT - BOTTOM) / 2.0,
        escape(y_label)
    );
}

fn legend(svg: &mut String, names: &[&str]) {
    for (i, name) in names.iter().enumerate() {
        let y = TOP + 10.0 + i as f64 * 20.0;
        let x = WIDTH - RIGHT + 15.0;
        let _ = writeln!(
            svg,
            r#"<rect x="{x}" y="{:.1}" width="14" height="10" fill="{}"/><text x="{:.1}" y="{y:.1}">{}</text>"#,
            y - 9.0,
            PALETTE[i % PALETTE.len()],
            x + 20.0,
            escape(name)
        );
    }
}

fn whisker(svg: &mut String, x: f64, axis: &Axis, lo: f64, hi: f64, color: &str) {
    if hi <= lo {
        return;
    }
    let (y_lo, y_hi) = (axis.y(lo), axis.y(hi));
    let _ = writeln!(
        svg,
        r#"<path d="M{x:.1} {y_lo:.1}V{y_hi:.1}M{:.1} {y_lo:.1}h8M{:.1} {y_hi:.1}h8" stroke="{color}" fill="none"/>"#,
        x - 4.0,
        x - 4.0
    );
}

/// A line chart: one line per series over numeric x values, whiskers at every point.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    log: bool,
    series: &[Series<Point>],
) -> String {
    let axis = Axis::new(
        log,
        series
            .iter()
            .flat_map(|s| s.values.iter().flat_map(|p| [p.y, p.hi])),
    );
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().map(|p| p.x))
        .collect();
    let x_min = xs.iter().copied().fold(f64::MAX, f64::min);
    let x_max = xs.iter().copied().fold(f64::MIN, f64::max);
    let x_span = (x_max - x_min).max(1.0);
    let plot_w = WIDTH - LEFT - RIGHT - 40.0;
    let x_of = |x: f64| LEFT + 20.0 + (x - x_min) / x_span * plot_w;

    let mut svg = String::new();
    frame(&mut svg, title, y_label, &axis);
    let mut ticks: Vec<f64> = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for x in ticks {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x_of(x),
            HEIGHT - BOTTOM + 18.0,
            label(x)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0,
        HEIGHT - BOTTOM + 45.0,
        escape(x_label)
    );
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = s
            .values
            .iter()
            .enumerate()
            .map(|(k, p)| {
                format!(
                    "{}{:.1} {:.1}",
                    if k == 0 { "M" } else { "L" },
                    x_of(p.x),
                    axis.y(p.y)
                )
            })
            .collect();
        let _ = writeln!(
            svg,
            r#"<path d="{}" stroke="{color}" stroke-width="2" fill="none"/>"#,
            path.join("")
        );
        for p in &s.values {
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"/>"#,
                x_of(p.x),
                axis.y(p.y)
            );
            whisker(&mut svg, x_of(p.x), &axis, p.lo, p.hi, color);
        }
    }
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    legend(&mut svg, &names);
    svg.push_str("</svg>\n");
    svg
}

/// A grouped bar chart: one group per entry of `groups`, one bar per series in each group
/// (`None` leaves a gap), whiskers on every bar.
pub fn bar_chart(
    title: &str,
    y_label: &str,
    log: bool,
    groups: &[String],
    series: &[Series<Option<Bar>>],
) -> String {
    let axis = Axis::new(
        log,
        series
            .iter()
            .flat_map(|s| s.values.iter().flatten().flat_map(|b| [b.value, b.hi])),
    );
    let plot_w = WIDTH - LEFT - RIGHT;
    let group_w = plot_w / groups.len().max(1) as f64;
    let bar_w = (group_w * 0.8) / series.len().max(1) as f64;

    let mut svg = String::new();
    frame(&mut svg, title, y_label, &axis);
    for (g, name) in groups.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            LEFT + (g as f64 + 0.5) * group_w,
            HEIGHT - BOTTOM + 18.0,
            escape(name)
        );
    }
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        for (g, bar) in s.values.iter().enumerate() {
            let Some(bar) = bar else { continue };
            let x = LEFT + g as f64 * group_w + group_w * 0.1 + i as f64 * bar_w;
            let y = axis.y(bar.value);
            let base = axis.y(axis.min);
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
                (bar_w - 2.0).max(1.0),
                (base - y).max(0.0)
            );
            whisker(
                &mut svg,
                x + bar_w / 2.0 - 1.0,
                &axis,
                bar.lo,
                bar.hi,
                "black",
            );
        }
    }
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    legend(&mut svg, &names);
    svg.push_str("</svg>\n");
    svg
}
