//! The evaluation run: planning judge units for every report, dependencies (FCQ
//! before caption revision before the text judges), and writing outputs.

pub mod record;
