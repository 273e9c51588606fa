//! The charts, drawn by plotters as SVG strings: lines against size, stacked bars, heat strips
//! of links by tier, and a timeline of ranks.

use plotters::prelude::*;
use plotters::style::Color;

use crate::page::escape;

/// Colors for series, in order (a colour-blind-safe palette: Okabe and Ito, 2008).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// The top of a value axis: a tenth above the highest value (and above 0).
fn axis_top(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0f64, f64::max).max(1e-9) * 1.1
}

/// The label of a row of a segmented axis: the row's name at its centre.
fn row_label(y: &SegmentValue<i32>, name: impl Fn(usize) -> Option<String>) -> String {
    match y {
        SegmentValue::CenterOf(i) => name(*i as usize).unwrap_or_default(),
        _ => String::new(),
    }
}

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Runs `draw` on an SVG area of `size`; a drawing error (none is expected from the SVG
/// backend) leaves a note instead of the chart.
fn svg(
    size: (u32, u32),
    draw: impl FnOnce(
        &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    ) -> Result<(), Box<dyn std::error::Error>>,
) -> String {
    let mut out = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        let r = root
            .fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|_| draw(&root).map_err(|e| e.to_string()));
        r.and_then(|_| root.present().map_err(|e| e.to_string()))
    };
    match result {
        Ok(()) => out,
        Err(e) => format!("<p>(chart not drawn: {})</p>", escape(&e)),
    }
}

/// Lines of `series` (name, points by size in bytes), sizes on a log₂ axis, with the legend
/// below.
pub fn lines_by_size(title: &str, y_label: &str, series: &[(String, Vec<(u64, f64)>)]) -> String {
    let log = |x: u64| (x.max(1) as f64).log2();
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| log(q.0)));
    let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (lo, hi) = if lo <= hi {
        (lo.floor(), hi.ceil())
    } else {
        (0.0, 1.0)
    };
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let top = axis_top(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let chart = svg((760, 360), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(lo..hi, 0f64..top)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 13))
            .x_desc("size")
            .y_desc(y_label)
            .x_labels((hi - lo) as usize + 1)
            .x_label_formatter(&|x| {
                if x.fract() == 0.0 && *x >= 0.0 && *x < 63.0 {
                    size_label(1u64 << *x as u32)
                } else {
                    String::new()
                }
            })
            .draw()?;
        for (i, (_, points)) in series.iter().enumerate() {
            let c = color(i);
            let at: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (log(x), y)).collect();
            chart.draw_series(LineSeries::new(at.iter().copied(), c.stroke_width(2)))?;
            chart.draw_series(at.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        Ok(())
    });
    chart + &legend(&series.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>())
}

/// Step lines of `series` (name, (ms, value) points, each value holding until the next point)
/// against time, with the legend below.
pub fn lines_over_time(title: &str, y_label: &str, series: &[(String, Vec<(f64, f64)>)]) -> String {
    let end = series
        .iter()
        .flat_map(|(_, p)| p.last().map(|q| q.0))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let top = axis_top(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let chart = svg((760, 340), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..end, 0f64..top)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 13))
            .x_desc("ms")
            .y_desc(y_label)
            .draw()?;
        for (i, (_, points)) in series.iter().enumerate() {
            let steps = points.windows(2).flat_map(|w| [w[0], (w[1].0, w[0].1)]);
            let steps: Vec<(f64, f64)> = steps.chain(points.last().copied()).collect();
            chart.draw_series(LineSeries::new(steps, color(i).stroke_width(1)))?;
        }
        Ok(())
    });
    chart + &legend(&series.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>())
}

/// One row per label: a bar from 0 to its value, and a line over its (low, high) range.
pub fn ranges(title: &str, unit: &str, rows: &[(String, f64, f64, f64)]) -> String {
    let lo = rows.iter().map(|r| r.2.min(r.1)).fold(0.0f64, f64::min);
    let hi = rows.iter().map(|r| r.3.max(r.1)).fold(0.0f64, f64::max);
    let pad = ((hi - lo) * 0.1).max(1e-6);
    let n = rows.len().max(1) as i32;
    svg((760, 70 + 34 * n as u32), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(220)
            .build_cartesian_2d(lo - pad..hi + pad, (0..n).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .label_style(("sans-serif", 13))
            .x_desc(unit)
            .y_label_formatter(&|y| row_label(y, |i| rows.get(i).map(|r| r.0.clone())))
            .draw()?;
        for (i, r) in rows.iter().enumerate() {
            let i = i as i32;
            let c = color(if r.1 > 0.0 { 5 } else { 2 });
            chart.draw_series(std::iter::once(Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (r.1, SegmentValue::Exact(i + 1)),
                ],
                c.mix(0.7).filled(),
            )))?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![
                    (r.2, SegmentValue::CenterOf(i)),
                    (r.3, SegmentValue::CenterOf(i)),
                ],
                BLACK.stroke_width(2),
            )))?;
        }
        Ok(())
    })
}

/// Lines of `series` (name, (point index, value)) over the labelled `points`, with the legend
/// below.
pub fn lines_by_point(
    title: &str,
    x_label: &str,
    points: &[String],
    series: &[(String, Vec<(usize, f64)>)],
) -> String {
    let top = axis_top(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let n = points.len().max(1);
    let chart = svg((760, 360), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top)?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 13))
            .x_desc(x_label)
            .x_labels(n.min(24))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    points.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()?;
        for (i, (_, values)) in series.iter().enumerate() {
            let c = color(i);
            let at: Vec<(f64, f64)> = values.iter().map(|&(p, y)| (p as f64, y)).collect();
            chart.draw_series(LineSeries::new(at.iter().copied(), c.stroke_width(2)))?;
            chart.draw_series(at.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        Ok(())
    });
    chart + &legend(&series.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>())
}

/// `bytes` as 1K, 4M, 16G.
pub fn size_label(bytes: u64) -> String {
    for (unit, shift) in [("G", 30), ("M", 20), ("K", 10)] {
        if bytes >= 1 << shift {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// One horizontal bar per row, stacked from its (part, fraction) segments (fractions of 1),
/// with its legend below.
pub fn stacked_bars(title: &str, rows: &[(String, Vec<(String, f64)>)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (_, segs) in rows {
        for (p, _) in segs {
            if !parts.contains(p) {
                parts.push(p.clone());
            }
        }
    }
    let n = rows.len().max(1) as i32;
    let chart = svg((760, 70 + 40 * n as u32), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(130)
            .build_cartesian_2d(0f64..1f64, (0..n).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .label_style(("sans-serif", 14))
            .y_label_formatter(&|y| row_label(y, |i| rows.get(i).map(|r| r.0.clone())))
            .x_label_formatter(&|x| format!("{:.0} %", x * 100.0))
            .draw()?;
        for (r, (_, segs)) in rows.iter().enumerate() {
            let mut at = 0.0;
            for (part, f) in segs {
                let k = parts.iter().position(|p| p == part).unwrap_or(0);
                let (a, b) = (at, (at + f).min(1.0));
                let r = r as i32;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(a, SegmentValue::Exact(r)), (b, SegmentValue::Exact(r + 1))],
                    color(k).filled(),
                )))?;
                at = b;
            }
        }
        Ok(())
    });
    chart + &legend(&parts.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A legend: a swatch of each series' colour, in order.
pub fn legend(names: &[&str]) -> String {
    let mut out = String::from("<p>");
    for (i, name) in names.iter().enumerate() {
        let RGBColor(r, g, b) = color(i);
        out += &format!(
            "<span style=\"display:inline-block;width:12px;height:12px;background:rgb({r},{g},{b});\
             margin:0 4px 0 12px\"></span>{}",
            escape(name)
        );
    }
    out + "</p>"
}

/// Heat strips: one row per link group (by tier), one cell per link, coloured from white (idle)
/// to dark red at `scale` (the busiest link's utilization, so that low loads still show).
pub fn heat_strips(title: &str, rows: &[(String, Vec<f64>)], scale: f64) -> String {
    let n = rows.len().max(1) as i32;
    let scale = if scale > 0.0 { scale } else { 1.0 };
    svg((760, 60 + 34 * n as u32), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(10)
            .y_label_area_size(130)
            .build_cartesian_2d(0f64..1f64, (0..n).into_segmented())?;
        chart
            .configure_mesh()
            .disable_mesh()
            .label_style(("sans-serif", 14))
            .y_label_formatter(&|y| row_label(y, |i| rows.get(i).map(|r| r.0.clone())))
            .x_label_formatter(&|_| String::new())
            .draw()?;
        for (r, (_, cells)) in rows.iter().enumerate() {
            let w = 1.0 / cells.len().max(1) as f64;
            let r = r as i32;
            chart.draw_series(cells.iter().enumerate().map(|(i, &u)| {
                let u = (u / scale).clamp(0.0, 1.0);
                let fade = (255.0 * (1.0 - u)) as u8;
                let shade = RGBColor(255 - (u * 90.0) as u8, fade, fade);
                Rectangle::new(
                    [
                        (i as f64 * w, SegmentValue::Exact(r)),
                        ((i + 1) as f64 * w, SegmentValue::Exact(r + 1)),
                    ],
                    shade.filled(),
                )
            }))?;
        }
        Ok(())
    })
}

/// A span of a rank's timeline: (row, lane index, start ns, end ns).
pub type Span = (u32, usize, u64, u64);

/// Ranks' timelines: one row per rank, split in a band per lane, a coloured span per op
/// (`lanes` name the bands).
pub fn timeline(title: &str, ranks: &[u32], lanes: &[&str], spans: &[Span]) -> String {
    let last = spans.iter().map(|s| s.3).max().unwrap_or(1).max(1);
    let end = last as f64 * 1e-6;
    let n = ranks.len().max(1);
    let bands = lanes.len().max(1) as f64;
    // Spans closer than half a pixel drawn as one: the page stays small, the picture the same.
    let spans = coalesce(spans, last / 1400);
    svg((760, 80 + 26 * n as u32), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..end, 0f64..n as f64)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .label_style(("sans-serif", 13))
            .x_desc("ms")
            .y_labels(n + 1)
            .y_label_formatter(&|y| {
                let row = y.floor() as usize;
                match ranks.get(row) {
                    Some(r) if (y - row as f64) < 0.01 => format!("rank {r}"),
                    _ => String::new(),
                }
            })
            .draw()?;
        for k in 0..lanes.len() {
            let c = color(k);
            chart.draw_series(spans.iter().filter(|s| s.1 == k).map(|&(row, _, a, b)| {
                let (a, b) = (a as f64 * 1e-6, b.max(a) as f64 * 1e-6);
                let y0 = f64::from(row) + k as f64 / bands;
                Rectangle::new([(a, y0), (b, y0 + 0.9 / bands)], c.filled())
            }))?;
        }
        Ok(())
    }) + &legend(lanes)
}

/// `spans` merged per (row, lane) where one starts within `gap` of the previous one's end.
fn coalesce(spans: &[Span], gap: u64) -> Vec<Span> {
    let mut sorted = spans.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<Span> = Vec::with_capacity(sorted.len());
    for s in sorted {
        match out.last_mut() {
            Some(p) if p.0 == s.0 && p.1 == s.1 && s.2 <= p.3.saturating_add(gap) => {
                p.3 = p.3.max(s.3);
            }
            _ => out.push(s),
        }
    }
    out
}
