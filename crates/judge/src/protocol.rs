//! The Chat Completions wire format: building request bodies, reading responses, and
//! recognising the 4xx/5xx replies that mean "this server does not accept that
//! parameter" so the client can adapt once and remember it for the run.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use serde_json::{json, Value};

use super::{Message, Part, Role, Usage};

/// How structured output is requested. Ordered: each rejection moves one step down,
/// never back up (the client remembers it for the endpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OutputMode {
    /// `{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}`.
    JsonSchema = 0,
    /// `{"type": "json_object", "schema": ...}` (llama-cpp-python's grammar-constrained
    /// form) plus the schema in the prompt.
    JsonObjectWithSchema = 1,
    /// `{"type": "json_object"}` plus the schema in the prompt.
    JsonObject = 2,
    /// No `response_format` at all; the schema in the prompt only.
    PromptOnly = 3,
}

impl OutputMode {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::JsonSchema,
            1 => Self::JsonObjectWithSchema,
            2 => Self::JsonObject,
            _ => Self::PromptOnly,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::JsonSchema => "json_schema",
            Self::JsonObjectWithSchema => "json_object+schema",
            Self::JsonObject => "json_object",
            Self::PromptOnly => "prompt_only",
        }
    }
    /// The mode of a [`name`](Self::name), as stored in the adaptations table.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::JsonSchema,
            Self::JsonObjectWithSchema,
            Self::JsonObject,
            Self::PromptOnly,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
    fn next(self) -> Option<Self> {
        match self {
            Self::JsonSchema => Some(Self::JsonObjectWithSchema),
            Self::JsonObjectWithSchema => Some(Self::JsonObject),
            Self::JsonObject => Some(Self::PromptOnly),
            Self::PromptOnly => None,
        }
    }
}

/// Which field carries the completion-length limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenParam {
    MaxTokens,
    MaxCompletionTokens,
}

impl TokenParam {
    pub fn name(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::MaxTokens, Self::MaxCompletionTokens]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

/// Per-endpoint adaptations, shared by every clone of the client.
#[derive(Debug)]
pub struct Adaptations {
    mode: AtomicU8,
    use_completion_tokens: AtomicBool,
    send_temperature: AtomicBool,
    send_seed: AtomicBool,
    /// The model reasons before it answers: token limits get reasoning headroom.
    reasoning: AtomicBool,
}

impl Default for Adaptations {
    fn default() -> Self {
        Self {
            mode: AtomicU8::new(OutputMode::JsonSchema as u8),
            use_completion_tokens: AtomicBool::new(false),
            send_temperature: AtomicBool::new(true),
            send_seed: AtomicBool::new(true),
            reasoning: AtomicBool::new(false),
        }
    }
}

/// The parameters one attempt is sent with (a copy, so the adaptation that a
/// rejection calls for is judged against what was actually sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireParams {
    pub mode: OutputMode,
    pub token_param: TokenParam,
    pub temperature: bool,
    pub seed: bool,
}

/// What a rejection asks us to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adaptation {
    SchemaUnsupported,
    SwitchTokenParam,
    DropTemperature,
    DropSeed,
}

impl Adaptations {
    /// The defaults, or, for `plain_json`, starting at (and never above) plain
    /// `json_object` answers.
    pub fn starting_at(plain_json: bool) -> Self {
        let a = Self::default();
        if plain_json {
            a.at_least(OutputMode::JsonObject);
        }
        a
    }

    /// Never ask for a stricter form than `mode`.
    pub fn at_least(&self, mode: OutputMode) {
        self.mode.fetch_max(mode as u8, Ordering::Relaxed);
    }

    pub fn current(&self) -> WireParams {
        WireParams {
            mode: OutputMode::from_u8(self.mode.load(Ordering::Relaxed)),
            token_param: if self.use_completion_tokens.load(Ordering::Relaxed) {
                TokenParam::MaxCompletionTokens
            } else {
                TokenParam::MaxTokens
            },
            temperature: self.send_temperature.load(Ordering::Relaxed),
            seed: self.send_seed.load(Ordering::Relaxed),
        }
    }

    /// Whether the model was seen reasoning before its answers.
    pub fn reasoning(&self) -> bool {
        self.reasoning.load(Ordering::Relaxed)
    }

    /// Note that the model reasons (or, restoring, that it does not); true when
    /// this changed what is known.
    pub fn set_reasoning(&self, reasons: bool) -> bool {
        self.reasoning.swap(reasons, Ordering::Relaxed) != reasons
    }

    /// Start from what an earlier run learnt (the adaptations table).
    pub fn restore(&self, learnt: &WireParams) {
        self.mode.store(learnt.mode as u8, Ordering::Relaxed);
        self.use_completion_tokens.store(
            learnt.token_param == TokenParam::MaxCompletionTokens,
            Ordering::Relaxed,
        );
        self.send_temperature
            .store(learnt.temperature, Ordering::Relaxed);
        self.send_seed.store(learnt.seed, Ordering::Relaxed);
    }

    /// Apply an adaptation relative to what `sent` used. Returns false when nothing
    /// is left to change (e.g. the prompt-only mode was rejected too).
    pub fn apply(&self, adaptation: Adaptation, sent: &WireParams) -> bool {
        match adaptation {
            Adaptation::SchemaUnsupported => match sent.mode.next() {
                Some(next) => {
                    self.mode.fetch_max(next as u8, Ordering::Relaxed);
                    true
                }
                None => false,
            },
            Adaptation::SwitchTokenParam => {
                self.use_completion_tokens
                    .store(sent.token_param == TokenParam::MaxTokens, Ordering::Relaxed);
                true
            }
            Adaptation::DropTemperature => {
                self.send_temperature.store(false, Ordering::Relaxed);
                sent.temperature
            }
            Adaptation::DropSeed => {
                self.send_seed.store(false, Ordering::Relaxed);
                sent.seed
            }
        }
    }
}

/// One message on the wire. Re-asks add an assistant turn, which the public
/// [`Role`] does not need to know about.
#[derive(Debug, Clone)]
pub struct WireMessage {
    pub role: &'static str,
    pub parts: Vec<Part>,
}

impl From<&Message> for WireMessage {
    fn from(m: &Message) -> Self {
        WireMessage {
            role: match m.role {
                Role::System => "system",
                Role::User => "user",
            },
            parts: m.parts.clone(),
        }
    }
}

/// The instruction added when the schema cannot travel in `response_format`.
pub fn schema_instruction(schema: &Value) -> String {
    format!(
        "Reply with one JSON object only (no prose, no code fences) that satisfies this \
         JSON schema:\n{}",
        serde_json::to_string_pretty(schema).unwrap_or_default()
    )
}

/// Where a schema that travels in the prompt (every mode but `json_schema`) goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SchemaPlace {
    /// At the end of the first user message (the default): the system block and the
    /// inputs stay a prefix shared between rubrics.
    #[default]
    EndOfUser,
    /// At the end of the system message, with the instructions, as the reference
    /// evaluator states its answer format (`--prompt-order reference`), so a vision
    /// request still ends with its image.
    EndOfSystem,
}

/// Build the request body for one attempt.
#[allow(clippy::too_many_arguments)]
pub fn build_body(
    model: &str,
    metric: &str,
    schema: &Value,
    conversation: &[WireMessage],
    params: &WireParams,
    seed: Option<u64>,
    max_tokens: Option<u32>,
    place: SchemaPlace,
) -> Value {
    let mut messages: Vec<Value> = Vec::with_capacity(conversation.len() + 1);
    // A schema that travels in the prompt goes at the end of the request's first
    // user message, after its own text: before the system block it would make
    // every rubric's prompt differ from the first token, and servers' prefix caches
    // could not share the system block and report text between rubrics. Under
    // `SchemaPlace::EndOfSystem` it ends the system message instead.
    let in_prompt = params.mode != OutputMode::JsonSchema;
    let first_system = conversation.iter().position(|m| m.role == "system");
    let first_user = conversation.iter().position(|m| m.role == "user");
    let target = match (place, first_system) {
        (SchemaPlace::EndOfSystem, Some(i)) => Some(i),
        _ => first_user,
    };
    if in_prompt && target.is_none() {
        messages.push(json!({"role": "system", "content": schema_instruction(schema)}));
    }
    for (i, m) in conversation.iter().enumerate() {
        if in_prompt && target == Some(i) {
            let mut with_schema = m.clone();
            with_schema.parts.push(Part::Text {
                text: schema_instruction(schema),
            });
            messages.push(wire_message(&with_schema));
        } else {
            messages.push(wire_message(m));
        }
    }
    let mut body = json!({"model": model, "messages": messages});
    let obj = body.as_object_mut().expect("object literal");
    if params.temperature {
        obj.insert("temperature".into(), json!(0));
    }
    if let (true, Some(seed)) = (params.seed, seed) {
        obj.insert("seed".into(), json!(seed));
    }
    if let Some(n) = max_tokens {
        obj.insert(params.token_param.name().into(), json!(n));
    }
    let response_format = match params.mode {
        OutputMode::JsonSchema => Some(json!({
            "type": "json_schema",
            "json_schema": {"name": schema_name(metric), "strict": true, "schema": schema}
        })),
        OutputMode::JsonObjectWithSchema => Some(json!({"type": "json_object", "schema": schema})),
        OutputMode::JsonObject => Some(json!({"type": "json_object"})),
        OutputMode::PromptOnly => None,
    };
    if let Some(rf) = response_format {
        obj.insert("response_format".into(), rf);
    }
    body
}

/// OpenAI requires `^[a-zA-Z0-9_-]{1,64}$` for schema names.
pub fn schema_name(metric: &str) -> String {
    let name: String = metric
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "answer".into()
    } else {
        name
    }
}

fn wire_message(m: &WireMessage) -> Value {
    let only_text = m.parts.iter().all(|p| matches!(p, Part::Text { .. }));
    // Plain string content where possible: some servers reject arrays for system
    // messages, and every server accepts strings.
    if only_text || m.role != "user" {
        let text: Vec<&str> = m
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                Part::Image { .. } => None,
            })
            .collect();
        return json!({"role": m.role, "content": text.join("\n\n")});
    }
    let content: Vec<Value> = m
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => json!({"type": "text", "text": text}),
            Part::Image { data_uri } => {
                json!({"type": "image_url", "image_url": {"url": data_uri}})
            }
        })
        .collect();
    json!({"role": m.role, "content": content})
}

/// What a successful HTTP reply carried.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: String,
    pub refusal: Option<String>,
    pub usage: Usage,
    pub model: String,
    pub finish_reason: Option<String>,
    /// The model reasoned before answering: a reasoning-token count in `usage`, a
    /// `reasoning_content` / `reasoning` text, or a `<think>` block in the content.
    pub reasoned: bool,
    /// `usage.completion_tokens_details.reasoning_tokens`, when reported.
    pub reasoning_tokens: u64,
}

/// Read a chat-completions response body. An error here means the server sent
/// something that is not a completion (a transient fault worth retrying).
pub fn parse_completion(body: &[u8]) -> Result<Completion, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("response body is not JSON ({e})"))?;
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return Err(format!(
            "server returned an error object: {}",
            error_text(err)
        ));
    }
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or("response has no choices")?;
    let message = choice
        .get("message")
        .ok_or("response choice has no message")?;
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        // Some servers return content as a list of text parts.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let refusal = message
        .get("refusal")
        .and_then(Value::as_str)
        .map(str::to_string);
    let usage = v.get("usage").map(read_usage).unwrap_or_default();
    let reasoning_tokens = v
        .pointer("/usage/completion_tokens_details/reasoning_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let reasoning_text = ["reasoning_content", "reasoning"].iter().any(|k| {
        message
            .get(*k)
            .and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty())
    });
    let reasoned =
        reasoning_tokens > 0 || reasoning_text || content.trim_start().starts_with("<think>");
    Ok(Completion {
        content,
        refusal,
        usage,
        reasoned,
        reasoning_tokens,
        model: v
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

fn read_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt_tokens: n(u.get("prompt_tokens")),
        completion_tokens: n(u.get("completion_tokens")),
        cached_tokens: n(u
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))),
    }
}

fn error_text(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        _ => err
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string()),
    }
}

/// The human-readable message of an error reply (for failure reasons), shortened.
pub fn error_message(body: &str) -> String {
    let text = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("error")
                .map(error_text)
                .or_else(|| v.get("detail").map(|d| d.to_string()))
                .or_else(|| v.get("message").and_then(Value::as_str).map(str::to_string))
        })
        .unwrap_or_else(|| body.to_string());
    let text = text.trim();
    if text.chars().count() > 500 {
        format!("{}...", text.chars().take(500).collect::<String>())
    } else {
        text.to_string()
    }
}

/// `base` joined with `path`, a query string of `base` kept at the end: Azure
/// OpenAI's base URLs carry `?api-version=...` after the deployment path.
pub fn endpoint_url(base: &str, path: &str) -> String {
    let base = base.trim();
    let (root, query) = match base.split_once('?') {
        Some((root, query)) => (root, query),
        None => (base, ""),
    };
    let root = root.trim_end_matches('/');
    let path = path.trim_start_matches('/');
    if query.is_empty() {
        format!("{root}/{path}")
    } else if path.contains('?') {
        format!("{root}/{path}&{query}")
    } else {
        format!("{root}/{path}?{query}")
    }
}

/// Whether the server takes its key in an `api-key` header rather than
/// `Authorization: Bearer` (Azure OpenAI and Azure AI services, recognised by host or
/// by the `api-version` query parameter).
pub fn uses_api_key_header(base: &str) -> bool {
    let Ok(url) = url::Url::parse(base.trim()) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    [
        ".openai.azure.com",
        ".cognitiveservices.azure.com",
        ".services.ai.azure.com",
    ]
    .iter()
    .any(|s| host.ends_with(s))
        || url.query_pairs().any(|(k, _)| k == "api-version")
}

/// Does this error reply ask for an adaptation? `sent` is what the failing attempt
/// used. Schema rejections come as 400/422, or as a 500 naming `response_format`
/// (llama-cpp-python's server); such a 500 is not a server fault and is not retried.
pub fn classify_rejection(status: u16, body: &str, sent: &WireParams) -> Option<Adaptation> {
    let lower = body.to_ascii_lowercase();
    let param = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.get("error")
                .and_then(|e| e.get("param"))
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
        })
        .unwrap_or_default();
    let names = |needle: &str| param == needle || lower.contains(needle);
    let mentions_schema = names("response_format")
        || lower.contains("json_schema")
        || lower.contains("'text' or 'json_object'");
    match status {
        400 | 422 => {
            let token = sent.token_param.name();
            if names(token) && (param == token || !lower.contains(&format!("use '{token}'"))) {
                return Some(Adaptation::SwitchTokenParam);
            }
            if sent.temperature && names("temperature") {
                return Some(Adaptation::DropTemperature);
            }
            if sent.seed && names("seed") && !mentions_schema {
                return Some(Adaptation::DropSeed);
            }
            if sent.mode != OutputMode::PromptOnly && (mentions_schema || lower.contains("schema"))
            {
                return Some(Adaptation::SchemaUnsupported);
            }
            None
        }
        500 if sent.mode != OutputMode::PromptOnly && mentions_schema => {
            Some(Adaptation::SchemaUnsupported)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> WireParams {
        Adaptations::default().current()
    }

    fn conv() -> Vec<WireMessage> {
        vec![
            WireMessage {
                role: "system",
                parts: vec![Part::Text {
                    text: "judge".into(),
                }],
            },
            WireMessage {
                role: "user",
                parts: vec![
                    Part::Text {
                        text: "look".into(),
                    },
                    Part::Image {
                        data_uri: "data:image/png;base64,AAAA".into(),
                    },
                ],
            },
        ]
    }

    #[test]
    fn endpoints_keep_the_base_query_and_azure_is_recognised() {
        assert_eq!(
            endpoint_url("http://h:1/v1/", "chat/completions"),
            "http://h:1/v1/chat/completions"
        );
        let azure = "https://x.openai.azure.com/openai/deployments/gpt4o?api-version=2024-10-21";
        assert_eq!(
            endpoint_url(azure, "/chat/completions"),
            "https://x.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            endpoint_url(azure, "/batches?limit=5"),
            "https://x.openai.azure.com/openai/deployments/gpt4o/batches?limit=5&api-version=2024-10-21"
        );
        assert!(uses_api_key_header(azure));
        assert!(uses_api_key_header(
            "https://x.cognitiveservices.azure.com/openai/v1"
        ));
        assert!(uses_api_key_header(
            "http://127.0.0.1:9/openai/deployments/d?api-version=1"
        ));
        assert!(!uses_api_key_header("https://api.openai.com/v1"));
        assert!(!uses_api_key_header("http://127.0.0.1:8080/v1"));
    }

    #[test]
    fn body_with_json_schema() {
        let schema = json!({"type": "object"});
        let b = build_body(
            "m",
            "citation support",
            &schema,
            &conv(),
            &params(),
            Some(7),
            Some(300),
            SchemaPlace::EndOfUser,
        );
        assert_eq!(b["model"], "m");
        assert_eq!(b["temperature"], 0);
        assert_eq!(b["seed"], 7);
        assert_eq!(b["max_tokens"], 300);
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(
            b["response_format"]["json_schema"]["name"],
            "citation_support"
        );
        assert_eq!(b["response_format"]["json_schema"]["strict"], true);
        assert_eq!(b["response_format"]["json_schema"]["schema"], schema);
        assert_eq!(b["messages"][0]["content"], "judge");
        assert_eq!(b["messages"][1]["content"][1]["type"], "image_url");
        assert_eq!(
            b["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AAAA"
        );
    }

    #[test]
    fn fallback_modes_put_schema_in_prompt() {
        let schema = json!({"type": "object", "properties": {"verdict": {"type": "string"}}});
        let a = Adaptations::default();
        let sent = a.current();
        assert!(a.apply(Adaptation::SchemaUnsupported, &sent));
        let p = a.current();
        assert_eq!(p.mode, OutputMode::JsonObjectWithSchema);
        let b = build_body(
            "m",
            "x",
            &schema,
            &conv(),
            &p,
            None,
            None,
            SchemaPlace::EndOfUser,
        );
        assert_eq!(
            b["response_format"],
            json!({"type": "json_object", "schema": schema})
        );
        // The system block stays first; the schema ends the user message.
        assert_eq!(b["messages"][0]["content"], "judge");
        let user = b["messages"][1]["content"].as_array().unwrap();
        assert_eq!(user[1]["type"], "image_url");
        assert!(user.last().unwrap()["text"]
            .as_str()
            .unwrap()
            .contains("\"verdict\""));
        assert!(b.get("seed").is_none() && b.get("max_tokens").is_none());
        // A stale rejection (from an attempt sent before the switch) does not skip a mode.
        assert!(a.apply(Adaptation::SchemaUnsupported, &sent));
        assert_eq!(a.current().mode, OutputMode::JsonObjectWithSchema);
        a.apply(Adaptation::SchemaUnsupported, &a.current());
        a.apply(Adaptation::SchemaUnsupported, &a.current());
        let p = a.current();
        assert_eq!(p.mode, OutputMode::PromptOnly);
        assert!(build_body(
            "m",
            "x",
            &schema,
            &conv(),
            &p,
            None,
            None,
            SchemaPlace::EndOfUser
        )
        .get("response_format")
        .is_none());
        assert!(!a.apply(Adaptation::SchemaUnsupported, &p));
    }

    #[test]
    fn schema_can_end_the_system_message_so_the_image_stays_last() {
        let schema = json!({"type": "object", "properties": {"verdict": {"type": "string"}}});
        let a = Adaptations::starting_at(true);
        let p = a.current();
        assert_eq!(p.mode, OutputMode::JsonObject);
        let b = build_body(
            "m",
            "x",
            &schema,
            &conv(),
            &p,
            None,
            None,
            SchemaPlace::EndOfSystem,
        );
        let system = b["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("judge\n\n"), "{system}");
        assert!(system.contains("\"verdict\""), "{system}");
        let user = b["messages"][1]["content"].as_array().unwrap();
        assert_eq!(user.len(), 2, "{user:?}");
        assert_eq!(user.last().unwrap()["type"], "image_url");
        // Under json_schema nothing travels in the prompt, wherever it would go.
        let strict = Adaptations::default().current();
        let b = build_body(
            "m",
            "x",
            &schema,
            &conv(),
            &strict,
            None,
            None,
            SchemaPlace::EndOfSystem,
        );
        assert_eq!(b["messages"][0]["content"], "judge");
    }

    #[test]
    fn classifies_parameter_rejections() {
        let p = params();
        let o1 = r#"{"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "param": "max_tokens"}}"#;
        assert_eq!(
            classify_rejection(400, o1, &p),
            Some(Adaptation::SwitchTokenParam)
        );
        let temp = r#"{"error": {"message": "Unsupported value: 'temperature' does not support 0 with this model.", "param": "temperature"}}"#;
        assert_eq!(
            classify_rejection(400, temp, &p),
            Some(Adaptation::DropTemperature)
        );
        let schema = r#"{"error": {"message": "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", "param": "response_format"}}"#;
        assert_eq!(
            classify_rejection(400, schema, &p),
            Some(Adaptation::SchemaUnsupported)
        );
        let llama = r#"{"error": {"message": "1 validation error: response_format.type Input should be 'text' or 'json_object'"}}"#;
        assert_eq!(
            classify_rejection(500, llama, &p),
            Some(Adaptation::SchemaUnsupported)
        );
        assert_eq!(classify_rejection(500, "{\"error\": \"boom\"}", &p), None);
        assert_eq!(classify_rejection(401, schema, &p), None);
        assert_eq!(
            classify_rejection(400, "{\"error\": \"bad image\"}", &p),
            None
        );
        // Already switched: a message naming the other parameter switches back.
        let switched = WireParams {
            token_param: TokenParam::MaxCompletionTokens,
            ..p
        };
        let rev =
            r#"{"error": {"message": "Unrecognized request argument: max_completion_tokens"}}"#;
        assert_eq!(
            classify_rejection(400, rev, &switched),
            Some(Adaptation::SwitchTokenParam)
        );
        assert_eq!(classify_rejection(400, o1, &switched), None);
    }

    #[test]
    fn parses_completions() {
        let body = br#"{"model": "gpt-x", "choices": [{"message": {"role": "assistant", "content": "{\"a\":1}"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}}}"#;
        let c = parse_completion(body).unwrap();
        assert_eq!(c.content, "{\"a\":1}");
        assert_eq!(c.model, "gpt-x");
        assert_eq!(
            c.usage,
            Usage {
                prompt_tokens: 12,
                completion_tokens: 3,
                cached_tokens: 8
            }
        );
        assert!(parse_completion(b"{\"choices\": [").is_err());
        assert!(parse_completion(b"{\"choices\": []}").is_err());
        assert!(parse_completion(b"{\"error\": {\"message\": \"x\"}}").is_err());
        let refusal = br#"{"choices": [{"message": {"content": null, "refusal": "no"}}]}"#;
        assert_eq!(
            parse_completion(refusal).unwrap().refusal.as_deref(),
            Some("no")
        );
    }

    #[test]
    fn error_messages_are_extracted_and_bounded() {
        assert_eq!(
            error_message(r#"{"error": {"message": "bad key"}}"#),
            "bad key"
        );
        assert_eq!(error_message("plain text"), "plain text");
        assert!(error_message(&"x".repeat(2000)).len() < 520);
    }
}
