//! What the store remembers about a judge server and model between runs: the
//! adaptations and vision verdict (restored at start, saved on change) and requests
//! known not to fit the context window.

use super::vision_check::announce_blind;
use super::Inner;
use crate::protocol::{OutputMode, WireParams};
use crate::vision::Vision;
use tvir_store::adaptations as stored;

impl Inner {
    /// Start from what an earlier run learnt about this server and model.
    pub(super) fn restore_learnt(&self) {
        let Some(store) = &self.store else { return };
        if self.config.relearn {
            match store.with_conn(|conn| stored::forget(conn, &self.server_key, &self.config.model))
            {
                Ok(()) => tracing::info!(
                    server = %self.server_key,
                    "--relearn-judge: what earlier runs learnt about this judge server is forgotten"
                ),
                Err(e) => tracing::warn!("forgetting the judge server's adaptations failed: {e}"),
            }
            return;
        }
        match store
            .with_conn(|conn| stored::known_window(conn, &self.server_key, &self.config.model))
        {
            Ok(Some(w)) => self.learn_window(w),
            Ok(None) => {}
            Err(e) => tracing::warn!("reading the judge's known context window failed: {e}"),
        }
        let row = match store
            .with_conn(|conn| stored::get(conn, &self.server_key, &self.config.model))
        {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("reading the judge server's adaptations failed, relearning: {e}");
                return;
            }
        };
        let (Some(mode), Some(token_param)) = (
            OutputMode::from_name(&row.output_mode),
            crate::protocol::TokenParam::from_name(&row.token_param),
        ) else {
            tracing::warn!(
                "stored adaptations of {} have unknown values; relearning",
                self.server_key
            );
            return;
        };
        self.adaptations.restore(&WireParams {
            mode,
            token_param,
            temperature: row.send_temperature,
            seed: row.send_seed,
        });
        self.adaptations.set_reasoning(row.reasoning);
        if self.config.plain_json {
            self.adaptations.at_least(OutputMode::JsonObject);
        }
        tracing::debug!(
            server = %self.server_key,
            mode = mode.name(),
            token_param = token_param.name(),
            "judge server adaptations restored from the store"
        );
        if let Some(sees) = row.vision {
            let detail = row.vision_detail.clone().unwrap_or_default();
            *self.vision_detail.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((sees, detail.clone()));
            if !self.config.assume_vision {
                let verdict = if sees {
                    Vision::Sees
                } else {
                    Vision::Blind(format!("remembered from an earlier run: {detail}"))
                };
                if !sees {
                    announce_blind(&self.config.model, &self.server_key, &detail, true);
                }
                let _ = self.vision_at_start.set(verdict.clone());
                let _ = self.vision.set(verdict);
            }
        }
    }

    /// Store what this run knows now (after an adaptation or a vision verdict).
    pub(super) fn save_learnt(&self) {
        let Some(store) = &self.store else { return };
        if self.config.plain_json {
            // `--answers json` chose the form: not something the server taught us.
            return;
        }
        let params = self.adaptations.current();
        let vision = self
            .vision_detail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let row = stored::StoredAdaptations {
            base_url: self.server_key.clone(),
            model: self.config.model.clone(),
            output_mode: params.mode.name().into(),
            token_param: params.token_param.name().into(),
            send_temperature: params.temperature,
            send_seed: params.seed,
            vision: vision.as_ref().map(|(sees, _)| *sees),
            vision_detail: vision.map(|(_, detail)| detail),
            updated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            reasoning: self.adaptations.reasoning(),
        };
        if let Err(e) = store.with_conn(|conn| stored::put(conn, &row)) {
            tracing::warn!("storing the judge server's adaptations failed: {e}");
        }
    }

    /// The reason an earlier run recorded for a request the server said does not
    /// fit its context window (same server, model and request), unless relearning.
    pub(super) fn remembered_overflow(&self, key: &str) -> Option<String> {
        if self.config.relearn || self.config.dry_run {
            return None;
        }
        let store = self.store.as_ref()?;
        let row = match store
            .with_conn(|conn| stored::get_overflow(conn, &self.server_key, &self.config.model, key))
        {
            Ok(row) => row?,
            Err(e) => {
                tracing::warn!("reading remembered context overflows failed, calling instead: {e}");
                return None;
            }
        };
        Some(format!(
            "{} (remembered from a run at {}; pass --relearn-judge if the server's context was raised since)",
            row.reason, row.updated_at
        ))
    }

    pub(super) fn remember_overflow(
        &self,
        key: &str,
        prompt: Option<u32>,
        window: Option<u32>,
        reason: &str,
    ) {
        let Some(store) = &self.store else { return };
        let row = stored::StoredOverflow {
            base_url: self.server_key.clone(),
            model: self.config.model.clone(),
            key: key.to_string(),
            prompt_tokens: prompt,
            context_window: window,
            reason: reason.to_string(),
            updated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        if let Err(e) = store.with_conn(|conn| stored::put_overflow(conn, &row)) {
            tracing::warn!("storing a context overflow failed: {e}");
        }
    }
}
