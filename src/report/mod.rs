//! Loading and deterministic parsing of a report into the [`Report`] model:
//! reference entries, fact-citation pairs, figures and structural errors.

pub mod model;

pub use model::*;

use std::path::Path;

/// Errors that stop a report from being parsed at all (anything softer is a warning
/// or a structural error inside the [`Report`]).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: {message}")]
    Unreadable { path: String, message: String },
}

/// Load and parse a report folder (`report.md` or `report.html`) or a single file.
pub fn load(path: &Path) -> Result<Report, ReportError> {
    Err(ReportError::Unreadable {
        path: path.display().to_string(),
        message: "parser not implemented yet".into(),
    })
}
