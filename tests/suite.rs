//! The integration tests, one binary: every file of `tests/` is a module of this
//! crate, so the shared helpers (`common/`) compile once and the test suite links once
//! instead of once per file (about fifty links, each carrying tokio, reqwest, rustls,
//! chromiumoxide and the image stack). `autotests = false` in Cargo.toml: a new file
//! runs only once it is named below, and `tests/architecture.rs` fails until it is.
//! Run one file's tests with `cargo test --test suite FILE::` (for example
//! `cargo test --test suite golden_outputs::`).

mod common;

mod ablate_variants;
mod agree_independent;
mod architecture;
mod batch_reattach;
mod chart_files_whole;
mod charts_render;
mod ci_budget;
mod docs_reference;
mod eval_batch;
mod eval_batch_waves;
mod eval_cli;
mod eval_corpus;
mod eval_custom_metrics;
mod eval_extraction;
mod eval_extraction_fallback;
mod eval_fidelity_inputs;
mod eval_mock;
mod eval_no_network;
mod eval_pipeline;
mod eval_prompt_order;
mod eval_prompt_preview;
mod eval_protocol;
mod eval_reference_real_run;
mod eval_reference_rules;
mod eval_scale;
mod example_embedded;
mod extraction_check;
mod fetch_cli;
mod fetch_corpus;
mod fetch_pages;
mod fidelity_flags;
mod golden_outputs;
mod iq_cli;
mod iq_corpus;
mod iq_golden;
mod iq_report;
mod iq_stream;
mod journal_replay;
mod judge_client;
mod judge_client_limits;
mod judge_real_servers;
mod judge_unreachable;
mod label_studio;
mod output_schemas;
mod outputs_compat;
mod page_mutation;
mod parse_byname;
mod parse_cli;
mod parse_corpus;
mod parse_export_dialects;
mod parse_fixtures;
mod parse_html;
mod parse_md_dialects;
mod parse_props;
mod prompt_layout;
mod rate_export_eval;
mod reporef_fixtures;
mod reporef_props;
mod selfcheck_mutation;
mod skip_rule;
mod summarize_corpus;
mod summarize_evidence;
mod summarize_runs;
mod summarize_significance;
