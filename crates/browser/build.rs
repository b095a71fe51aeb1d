//! Fingerprints the browser stage's own code (`src/` and `js/`): a render is the output
//! of this code as much as of the page, so the engine keys renders by it and never
//! takes a render made by other detection or capture code for this code's render.
//! FNV-1a over each file's path and bytes in path order: stable across machines and
//! toolchains (no dependency needed for a cache-version stamp).

use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let mut files = Vec::new();
    for dir in ["src", "js"] {
        println!("cargo:rerun-if-changed={dir}");
        collect(Path::new(dir), &mut files);
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in &files {
        let name = f.to_string_lossy().replace('\\', "/");
        let bytes = std::fs::read(f).unwrap_or_default();
        for b in name.bytes().chain([0]).chain(bytes) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=TVIR_BROWSER_CODE={h:016x}");
}
