//! Budget sweep: accuracy (± SE) per budget per model, as a table and an SVG chart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use super::metrics::Row;
use super::ReporefError;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    pub budget: u32,
    pub n: usize,
    pub correct: usize,
    pub accuracy: Option<f64>,
    pub se: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepSeries {
    pub model: String,
    /// Sorted by budget.
    pub points: Vec<SweepPoint>,
}

/// Groups rows with a budget by model (rows without a budget are not part of a sweep).
pub fn sweep_series(rows: &[Row]) -> Vec<SweepSeries> {
    let mut by_model: BTreeMap<String, Vec<SweepPoint>> = BTreeMap::new();
    for r in rows {
        let Some(budget) = r.budget else { continue };
        by_model
            .entry(r.model.clone().unwrap_or_else(|| r.name.clone()))
            .or_default()
            .push(SweepPoint {
                budget,
                n: r.n,
                correct: r.correct,
                accuracy: r.accuracy,
                se: r.se,
            });
    }
    by_model
        .into_iter()
        .map(|(model, mut points)| {
            points.sort_by_key(|p| p.budget);
            SweepSeries { model, points }
        })
        .collect()
}

/// Text table: one row per model, one column per budget, `acc ± se` in percent.
pub fn sweep_table(series: &[SweepSeries]) -> String {
    let budgets: BTreeSet<u32> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.budget))
        .collect();
    let name_w = series
        .iter()
        .map(|s| s.model.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!("{:<name_w$}", "model");
    for b in &budgets {
        out.push_str(&format!("  {:>15}", format!("B={b}")));
    }
    out.push('\n');
    for s in series {
        out.push_str(&format!("{:<name_w$}", s.model));
        for b in &budgets {
            let cell = s
                .points
                .iter()
                .find(|p| p.budget == *b)
                .and_then(|p| Some(format!("{:.2} ± {:.2}", p.accuracy? * 100.0, p.se? * 100.0)))
                .unwrap_or_else(|| "-".into());
            out.push_str(&format!("  {cell:>15}"));
        }
        out.push('\n');
    }
    out
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Writes an SVG line chart: x = budget (evenly spaced, as budgets are usually
/// powers of two), y = accuracy in percent, ±1 SE whiskers, one line per model.
pub fn render_svg(series: &[SweepSeries], path: &Path, title: &str) -> Result<(), ReporefError> {
    let chart_err = |e: String| ReporefError::Chart {
        path: path.to_path_buf(),
        message: e,
    };
    let budgets: Vec<u32> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.budget))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if budgets.is_empty() {
        return Err(chart_err("no budgets to plot".into()));
    }
    let xpos = |b: u32| budgets.iter().position(|&x| x == b).unwrap_or(0) as f64;
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| chart_err(e.to_string()))?;
    let x_max = (budgets.len() as f64 - 0.5).max(0.5);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5f64..x_max, 0f64..100f64)
        .map_err(|e| chart_err(e.to_string()))?;
    let labels = budgets.clone();
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_desc("tool-call budget B")
        .y_desc("accuracy (%)")
        .x_labels(budgets.len().max(2))
        .x_label_formatter(&|x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels
                    .get(i as usize)
                    .map(|b| b.to_string())
                    .unwrap_or_default()
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(|e| chart_err(e.to_string()))?;
    // Series sit slightly apart at each budget so equal accuracies and their
    // whiskers stay visible.
    let spread = 0.3f64.min(0.06 * series.len().saturating_sub(1) as f64);
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let dx = if series.len() > 1 {
            -spread / 2.0 + spread * i as f64 / (series.len() - 1) as f64
        } else {
            0.0
        };
        let pts: Vec<(f64, f64, f64)> = s
            .points
            .iter()
            .filter_map(|p| {
                Some((
                    xpos(p.budget) + dx,
                    p.accuracy? * 100.0,
                    p.se.unwrap_or(0.0) * 100.0,
                ))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|&(x, y, _)| (x, y)),
                color.stroke_width(2),
            ))
            .map_err(|e| chart_err(e.to_string()))?
            .label(s.model.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, y, _)| Circle::new((x, y), 3, color.filled())),
            )
            .map_err(|e| chart_err(e.to_string()))?;
        // ±1 SE whiskers with short caps.
        chart
            .draw_series(pts.iter().flat_map(|&(x, y, se)| {
                let (lo, hi) = ((y - se).max(0.0), (y + se).min(100.0));
                [
                    PathElement::new(vec![(x, lo), (x, hi)], color.stroke_width(1)),
                    PathElement::new(vec![(x - 0.04, lo), (x + 0.04, lo)], color.stroke_width(1)),
                    PathElement::new(vec![(x - 0.04, hi), (x + 0.04, hi)], color.stroke_width(1)),
                ]
            }))
            .map_err(|e| chart_err(e.to_string()))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| chart_err(e.to_string()))?;
    root.present().map_err(|e| chart_err(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> Vec<SweepSeries> {
        let p = |budget, correct: usize, n: usize| {
            let acc = crate::stats::Proportion::new(correct, n);
            SweepPoint {
                budget,
                n,
                correct,
                accuracy: acc.accuracy,
                se: acc.se,
            }
        };
        vec![
            SweepSeries {
                model: "alpha".into(),
                points: vec![p(1, 1, 4), p(4, 3, 4)],
            },
            SweepSeries {
                model: "beta".into(),
                points: vec![p(4, 2, 4)],
            },
        ]
    }

    #[test]
    fn table_has_one_column_per_budget() {
        let t = sweep_table(&series());
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("B=1") && lines[0].contains("B=4"));
        // alpha at B=1: 1/4 = 25.00 %, se sqrt(.25 * .75 / 4) = 0.2165 -> 21.65.
        assert!(lines[1].contains("25.00 ± 21.65"), "{t}");
        assert!(
            lines[2].trim_end().ends_with("50.00 ± 25.00") && lines[2].contains('-'),
            "{t}"
        );
    }

    #[test]
    fn svg_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.svg");
        render_svg(&series(), &path, "RepoRef budget sweep").unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("alpha") && svg.contains("beta") && svg.contains("polyline"));
    }
}
