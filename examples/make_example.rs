//! Regenerates the pictures of the shipped example benchmark (`examples/`): charts
//! drawn with plotters (SVG, rasterised to PNG with resvg), a synthetic landscape
//! "photo", a block diagram, and one deliberately broken image. The report texts and
//! `tasks.json` are hand-written and committed beside them.
//!
//! Run: `cargo run --example make_example` (writes into `examples/`).

use std::path::{Path, PathBuf};

use plotters::prelude::*;

fn out_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// Rasterise an SVG string to a PNG file (system fonts for the labels).
fn svg_to_png(svg: &str, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut opt = resvg::usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // "sans-serif" must map to an installed family or labels silently vanish.
    for family in ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial"] {
        if db
            .faces()
            .any(|f| f.families.iter().any(|(n, _)| n == family))
        {
            db.set_sans_serif_family(family);
            break;
        }
    }
    let tree = resvg::usvg::Tree::from_str(svg, &opt)?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("empty SVG")?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    std::fs::create_dir_all(path.parent().ok_or("no parent")?)?;
    pixmap.save_png(path)?;
    Ok(())
}

fn line_chart(
    title: &str,
    series: &[(&str, &[f64], RGBColor)],
    years: std::ops::Range<i32>,
) -> Result<String, Box<dyn std::error::Error>> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let max = series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .fold(0.0f64, f64::max)
            * 1.15;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 26))
            .margin(20)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(years.clone(), 0.0..max)?;
        chart
            .configure_mesh()
            .x_desc("Year")
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        for (name, values, color) in series {
            let color = *color;
            chart
                .draw_series(LineSeries::new(
                    years.clone().zip(values.iter().copied()),
                    color.stroke_width(3),
                ))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

fn bar_chart(
    title: &str,
    labels: &[&str],
    values: &[f64],
    color: RGBColor,
) -> Result<String, Box<dyn std::error::Error>> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let max = values.iter().copied().fold(0.0f64, f64::max) * 1.2;
        let n = labels.len();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 26))
            .margin(20)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..max)?;
        let names: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(labels.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 0.01 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()?;
        chart.draw_series(values.iter().enumerate().map(|(i, v)| {
            let x = i as f64;
            Rectangle::new([(x - 0.35, 0.0), (x + 0.35, *v)], color.mix(0.85).filled())
        }))?;
        root.present()?;
    }
    Ok(svg)
}

/// A synthetic landscape: sky gradient, sun, layered hills with texture.
fn landscape(w: u32, h: u32, seed: u32) -> image::RgbImage {
    image::RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
        let hill1 = 0.62 + 0.08 * (fx * 7.0 + seed as f64).sin();
        let hill2 = 0.75 + 0.05 * (fx * 13.0 + 1.3 * seed as f64).cos();
        // Deterministic texture so the picture has real edges (sharpness).
        // A 16-pixel tile repeats, which keeps the PNG small.
        let (tx, ty) = (x % 16, y % 16);
        let noise = (((tx.wrapping_mul(73_856_093) ^ ty.wrapping_mul(19_349_663) ^ seed) % 41)
            as f64)
            - 20.0;
        let (sx, sy) = (0.78, 0.22);
        let sun = ((fx - sx).powi(2) + (fy - sy).powi(2)).sqrt() < 0.07;
        let px = if sun {
            [250.0, 220.0, 90.0]
        } else if fy > hill2 {
            [40.0 + noise, 110.0 + noise, 45.0 + noise / 2.0]
        } else if fy > hill1 {
            [70.0 + noise, 140.0 + noise, 70.0 + noise / 2.0]
        } else {
            [90.0 + 80.0 * fy, 150.0 + 60.0 * fy, 235.0]
        };
        image::Rgb(px.map(|v| v.clamp(0.0, 255.0) as u8))
    })
}

fn diagram_svg(title: &str, boxes: &[&str]) -> String {
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="900" height="300" viewBox="0 0 900 300">
<rect width="900" height="300" fill="#ffffff"/>
<text x="450" y="40" font-family="sans-serif" font-size="24" text-anchor="middle">{title}</text>
<defs><marker id="arrow" markerWidth="10" markerHeight="10" refX="9" refY="3" orient="auto"><path d="M0,0 L0,6 L9,3 z" fill="#333"/></marker></defs>
"##
    );
    let n = boxes.len() as f64;
    let step = 860.0 / n;
    for (i, label) in boxes.iter().enumerate() {
        let x = 20.0 + i as f64 * step;
        s.push_str(&format!(
            r##"<rect x="{x}" y="110" width="{w}" height="90" rx="12" fill="#dbe9f6" stroke="#1f4e79" stroke-width="2"/>
<text x="{tx}" y="162" font-family="sans-serif" font-size="18" text-anchor="middle">{label}</text>
"##,
            w = step - 40.0,
            tx = x + (step - 40.0) / 2.0
        ));
        if i + 1 < boxes.len() {
            s.push_str(&format!(
                r##"<line x1="{a}" y1="155" x2="{b}" y2="155" stroke="#333" stroke-width="2" marker-end="url(#arrow)"/>
"##,
                a = x + step - 40.0,
                b = x + step - 2.0
            ));
        }
    }
    s.push_str("</svg>\n");
    s
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ex = out_dir();
    let blue = RGBColor(31, 119, 180);
    let orange = RGBColor(255, 127, 14);
    let green = RGBColor(44, 160, 44);

    // ex001: rooftop solar (both systems chart it).
    let svg = line_chart(
        "Rooftop solar capacity (GW, illustrative)",
        &[
            ("Residential", &[2.0, 2.6, 3.5, 4.7, 6.1, 7.9], blue),
            ("Commercial", &[1.5, 1.8, 2.3, 2.9, 3.4, 4.2], orange),
        ],
        2018..2024,
    )?;
    svg_to_png(&svg, &ex.join("system-a/ex001/charts/solar_capacity.png"))?;
    let svg = bar_chart(
        "Installed cost by year (USD per W, illustrative)",
        &["2019", "2020", "2021", "2022", "2023"],
        &[3.1, 2.9, 2.8, 2.7, 2.5],
        green,
    )?;
    svg_to_png(&svg, &ex.join("system-b/ex001/charts/install_cost.png"))?;
    let photo = landscape(720, 480, 7);
    for p in [
        "system-a/ex001/images/rooftops.png",
        "system-a/ex003/images/harbour.png",
    ] {
        std::fs::create_dir_all(ex.join(p).parent().ok_or("no parent")?)?;
        photo.save(ex.join(p))?;
    }
    // The broken image: bytes that are not any image format.
    let broken = ex.join("system-b/ex001/images/panel_closeup.png");
    std::fs::create_dir_all(broken.parent().ok_or("no parent")?)?;
    std::fs::write(&broken, b"this file was truncated during download\n")?;

    // ex002: urban cycling (system-a is text-only; system-b has a diagram and a chart).
    svg_to_png(
        &diagram_svg(
            "How a protected bike lane is planned",
            &[
                "Counts",
                "Route design",
                "Consultation",
                "Build",
                "Evaluate",
            ],
        ),
        &ex.join("system-b/ex002/images/planning_flow.png"),
    )?;
    let svg = bar_chart(
        "Daily cyclists on a corridor before/after a lane (illustrative)",
        &["Before", "6 months", "12 months", "24 months"],
        &[1200.0, 1850.0, 2300.0, 2650.0],
        blue,
    )?;
    svg_to_png(&svg, &ex.join("system-b/ex002/charts/corridor_counts.png"))?;

    // ex003: coffee prices.
    let svg = line_chart(
        "Arabica and Robusta benchmark prices (USD/lb, illustrative)",
        &[
            ("Arabica", &[1.1, 1.3, 2.0, 2.1, 1.8, 2.4], orange),
            ("Robusta", &[0.7, 0.7, 1.0, 1.0, 1.2, 1.9], green),
        ],
        2019..2025,
    )?;
    svg_to_png(&svg, &ex.join("system-a/ex003/charts/coffee_prices.png"))?;
    svg_to_png(&svg, &ex.join("system-b/ex003/charts/coffee_prices.png"))?;
    let farm = landscape(640, 480, 11);
    for p in [
        "system-b/ex003/images/farm.png",
        "system-b/ex003/images/farm_copy.png",
    ] {
        std::fs::create_dir_all(ex.join(p).parent().ok_or("no parent")?)?;
        farm.save(ex.join(p))?;
    }
    println!("example pictures written under {}", ex.display());
    Ok(())
}
