//! `--protocol reference`: every setting of the reference evaluator at once, each
//! overridable by its own flag, and the record of what the run followed.

use std::collections::BTreeMap;

use anyhow::Context;
use tvir_engine::{EvalSettings, ProtocolRecord};
use tvir_rubric::RubricSet;

use crate::eval::EvalOptions;
use tvir_sources::Backend;

use crate::eval::choices::{
    AggregatesArg, AnswersArg, CscUnreadableArg, DedupArg, ExtractionArg, FigureKindsArg,
    McBandArg, PromptOrderArg, ProtocolArg, RoundingArg, SettleArg, UnreadArg,
};

/// The flags a protocol sets (each None unless given on the command line).
pub(crate) struct Flags<'a> {
    pub protocol: Option<ProtocolArg>,
    pub extraction: &'a mut Option<ExtractionArg>,
    pub dedup: &'a mut Option<DedupArg>,
    pub fetcher: &'a mut Option<Backend>,
    pub figure_kinds: &'a mut Option<FigureKindsArg>,
    pub aggregates: &'a mut Option<AggregatesArg>,
    pub rounding: &'a mut Option<RoundingArg>,
    pub settle: &'a mut Option<SettleArg>,
    pub csc_unreadable: &'a mut Option<CscUnreadableArg>,
    pub unread: &'a mut Option<UnreadArg>,
    pub answers: &'a mut Option<AnswersArg>,
    pub mc_band: &'a mut Option<McBandArg>,
    pub prompt_order: &'a mut Option<PromptOrderArg>,
}

/// The protocol of a run and the settings given by a flag beside it.
pub(crate) struct Protocol {
    name: ProtocolArg,
    overrides: Vec<String>,
}

/// The run's protocol (every setting it implies filled in `args`) and its rubric set,
/// loaded with the overrides and set up as those settings ask (MC band, prompt
/// layout).
pub(crate) fn protocol_and_rubrics(
    args: &mut EvalOptions,
) -> anyhow::Result<(Protocol, RubricSet)> {
    let protocol = resolve_protocol(Flags {
        protocol: args.protocol,
        extraction: &mut args.extraction,
        dedup: &mut args.dedup,
        fetcher: &mut args.fetch.fetcher,
        figure_kinds: &mut args.figure_kinds,
        aggregates: &mut args.aggregates,
        rounding: &mut args.rounding,
        settle: &mut args.settle,
        csc_unreadable: &mut args.csc_unreadable,
        unread: &mut args.unread,
        answers: &mut args.answers,
        mc_band: &mut args.mc_band,
        prompt_order: &mut args.prompt_order,
    });
    let mut rubrics = RubricSet::load(args.rubrics.as_deref(), args.prompts.as_deref())
        .context("loading rubrics and prompts")?;
    if args.mc_band == Some(McBandArg::Judge) {
        rubrics.leave_bands_to_the_judge();
    }
    rubrics
        .use_prompt_order(args.prompt_order.unwrap_or(PromptOrderArg::Cached).into())
        .context("laying out the prompts")?;
    Ok((protocol, rubrics))
}

/// Fill every setting the protocol implies that no flag gave (the flags stay as
/// given: a flag beside `--protocol` overrides that one setting).
pub(crate) fn resolve_protocol(args: Flags<'_>) -> Protocol {
    let name = args.protocol.unwrap_or(ProtocolArg::Default);
    let mut overrides = Vec::new();
    if name == ProtocolArg::Reference {
        macro_rules! imply {
            ($field:expr, $flag:literal, $value:expr) => {
                match $field {
                    Some(_) => overrides.push($flag.to_string()),
                    None => *$field = Some($value),
                }
            };
        }
        imply!(args.extraction, "extraction", ExtractionArg::Judge);
        imply!(args.dedup, "dedup", DedupArg::JudgeAll);
        imply!(args.fetcher, "fetcher", Backend::Serper);
        imply!(args.figure_kinds, "figure-kinds", FigureKindsArg::Path);
        imply!(args.aggregates, "aggregates", AggregatesArg::Present);
        imply!(args.rounding, "rounding", RoundingArg::Reference);
        imply!(args.settle, "settle", SettleArg::None);
        imply!(
            args.csc_unreadable,
            "csc-unreadable",
            CscUnreadableArg::Judge
        );
        imply!(args.unread, "unread", UnreadArg::Reference);
        imply!(args.answers, "answers", AnswersArg::Json);
        imply!(args.mc_band, "mc-band", McBandArg::Judge);
        imply!(args.prompt_order, "prompt-order", PromptOrderArg::Reference);
    }
    Protocol { name, overrides }
}

impl Protocol {
    /// What `run.json` and each `report.json` record: the protocol and the value of
    /// every setting it fixes, as the run used it.
    pub(crate) fn record(
        &self,
        s: &EvalSettings,
        fetcher: Option<Backend>,
        answers: Option<AnswersArg>,
        mc_band: Option<McBandArg>,
        rubrics: &RubricSet,
    ) -> ProtocolRecord {
        let mut settings = BTreeMap::new();
        settings.insert("extraction".into(), j(&s.extraction));
        settings.insert("dedup".into(), j(&s.dedup));
        settings.insert(
            "fetcher".into(),
            fetcher.unwrap_or_default().as_str().to_string(),
        );
        settings.insert("figure-kinds".into(), j(&s.figure_kinds));
        settings.insert("aggregates".into(), j(&s.score.aggregates));
        settings.insert("rounding".into(), j(&s.score.rounding));
        settings.insert("settle".into(), j(&s.settle));
        settings.insert("csc-unreadable".into(), j(&s.csc_unreadable));
        settings.insert("unread".into(), j(&s.unread));
        settings.insert(
            "answers".into(),
            match answers.unwrap_or(AnswersArg::Schema) {
                AnswersArg::Schema => "schema",
                AnswersArg::Json => "json",
            }
            .into(),
        );
        settings.insert(
            "mc-band".into(),
            match mc_band.unwrap_or(McBandArg::Code) {
                McBandArg::Code => "code",
                McBandArg::Judge => "judge",
            }
            .into(),
        );
        // As the rubric set lays requests out (what was asked, not what was given).
        settings.insert(
            "prompt-order".into(),
            rubrics.prompt_order().name().to_string(),
        );
        settings.insert("dedup-keep".into(), j(&s.dedup_keep));
        settings.insert("revision-scope".into(), j(&s.revision_scope));
        settings.insert("image-size".into(), s.image_size.name());
        settings.insert(
            "source-chars".into(),
            s.source_chars.unwrap_or(0).to_string(),
        );
        ProtocolRecord {
            name: match self.name {
                ProtocolArg::Default => "default",
                ProtocolArg::Reference => "reference",
            }
            .into(),
            settings,
            overrides: self.overrides.clone(),
        }
    }
}

/// A setting as the string its serde form gives (`judge-all`, `present`).
fn j<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
