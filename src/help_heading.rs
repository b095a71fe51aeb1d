//! The headings `--help` groups flags under, shared by every command so that the
//! same kind of flag is found under the same heading everywhere.

pub const INPUTS: &str = "Inputs";
pub const JUDGE: &str = "Judge";
pub const PAGES: &str = "Pages";
pub const BROWSER: &str = "Browser";
pub const FIDELITY: &str = "Protocol and fidelity";
pub const OUTPUTS: &str = "Outputs";
pub const LIMITS: &str = "Limits";
