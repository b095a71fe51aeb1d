//! Text renderings of an [`AblationReport`]: per judge, the base leaderboard, one
//! overview row per variant (PAR/OSC/OPC against the base), and per variant its
//! leaderboard with rank shifts and score deltas. Scores on the 0-100 scale, PAR in
//! percent (as the paper prints it), correlations on [-1, 1].

use crate::aggregate::render::{fmt_score, TextTable};
use crate::aggregate::summary::SystemStats;

use super::{AblationReport, JudgeAblation, LevelVsBase, VariantResult};

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.2}", v * 100.0))
}

fn corr(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

fn signed(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(v) if (v * 100.0).abs() < 0.005 => "0.00".into(),
        Some(v) => format!("{:+.2}", v * 100.0),
    }
}

fn shift(s: i64) -> String {
    match s {
        0 => "=".into(),
        s if s > 0 => format!("+{s}"),
        s => s.to_string(),
    }
}

fn level<'a>(v: &'a VariantResult, name: &str) -> Option<&'a LevelVsBase> {
    v.agreement.iter().find(|l| l.level == name)
}

fn base_table(j: &JudgeAblation) -> TextTable {
    TextTable {
        title: format!(
            "Base leaderboard, judge {} ({} reports, {} run(s))",
            j.judge_model,
            j.reports,
            j.runs.len()
        ),
        headers: ["Rank", "System", "Overall", "TA", "VA"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows: j
            .base
            .iter()
            .enumerate()
            .map(|(i, s): (usize, &SystemStats)| {
                vec![
                    (i + 1).to_string(),
                    s.system.clone(),
                    fmt_score(&s.overall),
                    fmt_score(&s.ta),
                    fmt_score(&s.va),
                ]
            })
            .collect(),
    }
}

fn overview_table(j: &JudgeAblation) -> TextTable {
    let mut headers = vec!["Variant".to_string(), "Leader".to_string()];
    for l in ["Overall", "TA", "VA"] {
        headers.push(format!("{l} PAR"));
        headers.push(format!("{l} OSC"));
    }
    headers.extend(["Moved".to_string(), "Reports changed".to_string()]);
    TextTable {
        title: format!(
            "Variants against the base, judge {} (PAR %, OSC)",
            j.judge_model
        ),
        headers,
        rows: j
            .variants
            .iter()
            .map(|v| {
                let mut row = vec![
                    v.name.clone(),
                    v.leaderboard
                        .first()
                        .map_or("-".into(), |s| s.system.clone()),
                ];
                for l in ["overall", "ta", "va"] {
                    let a = level(v, l).map(|x| &x.agreement);
                    row.push(pct(a.and_then(|a| a.par)));
                    row.push(corr(a.and_then(|a| a.osc)));
                }
                let moved = v.movement.iter().filter(|m| m.shift != 0).count();
                row.push(format!("{moved}/{}", v.movement.len()));
                row.push(v.reports_changed.to_string());
                row
            })
            .collect(),
    }
}

fn variant_tables(j: &JudgeAblation, v: &VariantResult) -> Vec<TextTable> {
    let title = match &v.description {
        Some(d) => format!("Variant {}: {d} (judge {})", v.name, j.judge_model),
        None => format!("Variant {} (judge {})", v.name, j.judge_model),
    };
    let board = TextTable {
        title,
        headers: [
            "Rank", "System", "Shift", "Overall", "dOverall", "TA", "dTA", "VA", "dVA",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: v
            .leaderboard
            .iter()
            .zip(&v.movement)
            .map(|(s, m)| {
                vec![
                    m.rank.to_string(),
                    s.system.clone(),
                    shift(m.shift),
                    fmt_score(&s.overall),
                    signed(m.delta_overall),
                    fmt_score(&s.ta),
                    signed(m.delta_ta),
                    fmt_score(&s.va),
                    signed(m.delta_va),
                ]
            })
            .collect(),
    };
    let agreement = TextTable {
        title: format!("Variant {} against the base, per level", v.name),
        headers: [
            "Level",
            "Cells",
            "PAR %",
            "PAR 95% CI",
            "OPC",
            "OSC",
            "OSC 95% CI",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: v
            .agreement
            .iter()
            .map(|l| {
                let a = &l.agreement;
                let ci = |c: Option<[f64; 2]>, scale: f64, digits: usize| {
                    c.map_or("-".into(), |[lo, hi]| {
                        format!("[{:.*}, {:.*}]", digits, lo * scale, digits, hi * scale)
                    })
                };
                vec![
                    l.level.clone(),
                    a.cells.to_string(),
                    pct(a.par),
                    ci(a.par_ci, 100.0, 2),
                    corr(a.opc),
                    corr(a.osc),
                    ci(a.osc_ci, 1.0, 3),
                ]
            })
            .collect(),
    };
    let mut agreement = agreement;
    if agreement.rows.is_empty() {
        // Say why the table is empty rather than print a bare header.
        agreement.rows.push(vec![
            "(no level is scored on both sides)".into(),
            "0".into(),
        ]);
        agreement.rows[0].extend(std::iter::repeat_n("-".to_string(), 5));
    }
    vec![board, agreement]
}

fn render(r: &AblationReport, md: bool) -> String {
    let mut out = String::new();
    let mut emit = |t: TextTable| {
        out.push_str(&if md { t.markdown() } else { t.terminal() });
        out.push('\n');
    };
    for j in &r.judges {
        emit(base_table(j));
        emit(overview_table(j));
        for v in &j.variants {
            for t in variant_tables(j, v) {
                emit(t);
            }
        }
    }
    let mut tail = String::new();
    for v in r
        .judges
        .first()
        .map(|j| j.variants.as_slice())
        .unwrap_or(&[])
    {
        if !v.changes.is_empty() {
            tail.push_str(&format!("{}: {}\n", v.name, v.changes.join("; ")));
        } else {
            tail.push_str(&format!("{}: no change from the base\n", v.name));
        }
        if v.units_failed > 0 {
            tail.push_str(&format!(
                "{}: {} stored answers do not score under this variant and count as failed units\n",
                v.name, v.units_failed
            ));
        }
    }
    for j in &r.judges {
        for v in &j.variants {
            // Metric-level notes (a metric constant under a variant, say) would
            // drown the rest; they stay in the JSON.
            for l in v
                .agreement
                .iter()
                .filter(|l| ["overall", "ta", "va"].contains(&l.level.as_str()))
            {
                for n in &l.agreement.notes {
                    tail.push_str(&format!(
                        "{} / {} / {}: {n}\n",
                        j.judge_model, v.name, l.level
                    ));
                }
            }
        }
    }
    for n in &r.notes {
        tail.push_str(&format!("note: {n}\n"));
    }
    for i in &r.load_issues {
        tail.push_str(&format!("unreadable: {}: {}\n", i.path, i.message));
    }
    if !tail.is_empty() {
        if md {
            out.push_str("### Notes\n\n");
            for line in tail.lines() {
                out.push_str(&format!("- {}\n", line.replace('|', "\\|")));
            }
        } else {
            out.push_str(&tail);
        }
    }
    out
}

/// Aligned text for the terminal.
pub fn to_terminal(r: &AblationReport) -> String {
    render(r, false)
}

/// Markdown tables.
pub fn to_markdown(r: &AblationReport) -> String {
    render(r, true)
}
