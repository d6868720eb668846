//! The comparison report: a markdown table and an SVG chart (plotters, svg backend only).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use plotters::prelude::*;

use crate::load::Stats;
use crate::servers::Kind;

/// One server's measured run.
pub struct Row {
    pub kind: Kind,
    pub stats: Stats,
    /// Server CPU time during the measured run.
    pub cpu: Option<Duration>,
    pub rss: Option<u64>,
    pub ready: Duration,
}

impl Row {
    fn label(&self) -> &'static str {
        match self.kind {
            Kind::Java => "Java 5.5.0",
            Kind::Ours => "namesrv (Rust)",
            Kind::OursUnpinned => "namesrv, pinThreads=false",
            Kind::OursOneReactor => "namesrv, reactorThreads=1",
            Kind::OursAcl => "namesrv, aclEnable=true",
            Kind::OursAcl2 => "namesrv, authenticationEnabled=true",
            Kind::Ceiling => "no-work ceiling",
        }
    }
}

/// Today (UTC) as YYYY-MM-DD.
pub fn today() -> String {
    let days = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn mb(b: Option<u64>) -> String {
    b.map_or("–".into(), |b| format!("{:.0}", b as f64 / (1024.0 * 1024.0)))
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "–".into()
    }
}

/// One row per server: its median-QPS round.
pub fn medians(runs: &[(usize, Row)]) -> Vec<&Row> {
    let mut kinds: Vec<Kind> = Vec::new();
    for (_, r) in runs {
        if !kinds.contains(&r.kind) {
            kinds.push(r.kind);
        }
    }
    kinds
        .into_iter()
        .map(|k| {
            let mut of: Vec<&Row> = runs.iter().map(|(_, r)| r).filter(|r| r.kind == k).collect();
            of.sort_by(|a, b| a.stats.qps().total_cmp(&b.stats.qps()));
            of[of.len() / 2]
        })
        .collect()
}

/// QPS of `a` / QPS of `b` in each round that measured both, and their median.
fn paired_ratio(runs: &[(usize, Row)], a: Kind, b: Kind) -> Option<(f64, Vec<f64>)> {
    let qps = |round: usize, k: Kind| runs.iter().find(|(n, r)| *n == round && r.kind == k).map(|(_, r)| r.stats.qps());
    let rounds = runs.iter().map(|(n, _)| *n).max()? + 1;
    let ratios: Vec<f64> = (0..rounds)
        .filter_map(|n| Some((qps(n, a)?, qps(n, b)?)))
        .filter(|(_, y)| *y > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    Some((*sorted.get(sorted.len() / 2)?, ratios))
}

fn write_paired(s: &mut String, runs: &[(usize, Row)], a: Kind, b: Kind, text: &str) {
    if let Some((median, all)) = paired_ratio(runs, a, b) {
        let each: Vec<String> = all.iter().map(|r| format!("{r:.2}")).collect();
        let _ = if all.len() > 1 {
            writeln!(s, "- {text}: **{median:.2}** (median of the rounds: {})", each.join(", "))
        } else {
            writeln!(s, "- {text}: **{median:.2}**")
        };
    }
}

/// The report of `runs` (round, measurement): a table of each server's median round, the ratios, the chart.
pub fn markdown(runs: &[(usize, Row)], settings: &str, chart_file: &str) -> String {
    let rows = medians(runs);
    let mut s = String::new();
    let _ = writeln!(s, "# namesrv side-by-side comparison, {}\n", today());
    let _ = writeln!(s, "{settings}\n");
    let _ = writeln!(
        s,
        "| server | QPS | p50 µs | p99 µs | p999 µs | errors | server CPU s | CPU µs/request | RSS MB | start-to-ready ms |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let n = (r.stats.ok + r.stats.not_found + r.stats.errors).max(1);
        let _ = writeln!(
            s,
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {} | {} |",
            r.label(),
            r.stats.qps(),
            r.stats.read_us(0.5),
            r.stats.read_us(0.99),
            r.stats.read_us(0.999),
            r.stats.errors + r.stats.not_found,
            r.cpu.map_or("–".into(), |c| format!("{:.2}", c.as_secs_f64())),
            r.cpu.map_or("–".into(), |c| format!("{:.1}", c.as_secs_f64() * 1e6 / n as f64)),
            mb(r.rss),
            r.ready.as_millis()
        );
    }
    let get = |k: Kind| rows.iter().copied().find(|r| r.kind == k);
    let rounds = runs.iter().map(|(n, _)| n + 1).max().unwrap_or(0);
    if rounds > 1 {
        let _ = writeln!(s, "\nEach row is the server's median round of {rounds}; QPS per round:\n");
        for r in &rows {
            let each: Vec<String> =
                runs.iter().filter(|(_, x)| x.kind == r.kind).map(|(_, x)| format!("{:.0}", x.stats.qps())).collect();
            let _ = writeln!(s, "- {}: {}", r.label(), each.join(", "));
        }
    }
    let _ = writeln!(s, "\nRatios from this run (same machine, same generator settings, one after another):\n");
    if let (Some(o), Some(j)) = (get(Kind::Ours), get(Kind::Java)) {
        let _ = writeln!(s, "- QPS ours / Java: **{}**", ratio(o.stats.qps(), j.stats.qps()));
        let _ = writeln!(s, "- p99 Java / ours: **{}**", ratio(j.stats.read_us(0.99), o.stats.read_us(0.99)));
        if let (Some(a), Some(b)) = (o.rss, j.rss) {
            let _ = writeln!(s, "- RSS Java / ours: **{}**", ratio(b as f64, a as f64));
        }
        if let (Some(a), Some(b)) = (o.cpu, j.cpu) {
            let per = |c: Duration, r: &Row| c.as_secs_f64() / (r.stats.ok + r.stats.not_found).max(1) as f64;
            let _ = writeln!(s, "- CPU per request Java / ours: **{}**", ratio(per(b, j), per(a, o)));
        }
        let _ =
            writeln!(s, "- start-to-ready Java / ours: **{}**", ratio(j.ready.as_secs_f64(), o.ready.as_secs_f64()));
    }
    write_paired(&mut s, runs, Kind::Ours, Kind::Ceiling, "QPS ours (defaults) / ceiling");
    write_paired(&mut s, runs, Kind::OursUnpinned, Kind::Ceiling, "QPS ours (pinThreads=false) / ceiling");
    write_paired(&mut s, runs, Kind::OursOneReactor, Kind::Ceiling, "QPS ours (reactorThreads=1) / ceiling");
    write_paired(&mut s, runs, Kind::OursOneReactor, Kind::Java, "QPS ours (reactorThreads=1) / Java");
    let _ = writeln!(s, "\n![QPS and latency percentiles]({chart_file})");
    s
}

const QUANTILES: [f64; 9] = [0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999];

/// Left: QPS bars; right: read latency by percentile (x in "nines").
pub fn chart(rows: &[&Row], path: &Path) -> Result<(), String> {
    let root = SVGBackend::new(path, (1000, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (left, right) = root.split_horizontally(360);
    let colors = [
        RGBColor(200, 80, 40),
        RGBColor(40, 110, 200),
        RGBColor(120, 120, 120),
        RGBColor(60, 170, 90),
        RGBColor(140, 60, 170),
    ];
    let color = |r: &Row| match r.kind {
        Kind::Java => colors[0],
        Kind::Ours => colors[1],
        Kind::Ceiling => colors[2],
        Kind::OursUnpinned => colors[3],
        Kind::OursOneReactor => colors[4],
        Kind::OursAcl | Kind::OursAcl2 => colors[3],
    };

    let max_qps = rows.iter().map(|r| r.stats.qps()).fold(1.0, f64::max) * 1.15;
    let mut c = ChartBuilder::on(&left)
        .caption("throughput (queries/s)", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..rows.len() as f64, 0f64..max_qps)
        .map_err(|e| e.to_string())?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_label_formatter(&|v| format!("{:.0}k", v / 1000.0))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, r) in rows.iter().enumerate() {
        let x0 = i as f64 + 0.15;
        c.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x0 + 0.7, r.stats.qps())], color(r).filled())))
            .map_err(|e| e.to_string())?;
        c.draw_series(std::iter::once(Text::new(
            r.label().to_string(),
            (x0, r.stats.qps() + max_qps * 0.02),
            ("sans-serif", 13),
        )))
        .map_err(|e| e.to_string())?;
    }

    let nines = |q: f64| -(1.0 - q).log10();
    let max_us = rows.iter().map(|r| r.stats.read_us(0.9999)).fold(1.0, f64::max) * 1.1;
    let mut c = ChartBuilder::on(&right)
        .caption("read latency by percentile (µs)", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.25f64..4.1, (1f64..max_us).log_scale())
        .map_err(|e| e.to_string())?;
    c.configure_mesh()
        .x_desc("percentile")
        .x_label_formatter(&|x| format!("p{}", 100.0 - 100.0 * 10f64.powf(-*x)))
        .draw()
        .map_err(|e| e.to_string())?;
    for r in rows {
        let col = color(r);
        let pts: Vec<(f64, f64)> = QUANTILES.iter().map(|&q| (nines(q), r.stats.read_us(q).max(1.0))).collect();
        c.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(r.label())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
        c.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, col.filled()))).map_err(|e| e.to_string())?;
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
