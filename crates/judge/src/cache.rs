//! Cache keys: SHA-256 of the canonical request. The key covers everything that can
//! change the answer (model, metric name, messages, schema, temperature, seed,
//! max_tokens, sample index) and nothing that cannot (report and unit labels, base
//! URL, credentials). Canonical means object keys sorted at every depth, so two
//! schemas that differ only in key order share answers.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::JudgeRequest;

/// Bump when the key's composition changes, so old rows are simply never hit.
const KEY_VERSION: u32 = 1;

pub fn cache_key(
    model: &str,
    request: &JudgeRequest,
    seed: Option<u64>,
    max_tokens: Option<u32>,
) -> String {
    let mut hasher = Sha256::new();
    // Length-prefixed fields, so no two different requests hash the same bytes.
    let mut field = |name: &str, write: &mut dyn FnMut(&mut Sha256)| {
        hasher.update(name.as_bytes());
        hasher.update(b"=");
        write(&mut hasher);
        hasher.update(b"\n");
    };
    field("v", &mut |h| h.update(KEY_VERSION.to_le_bytes()));
    field("model", &mut |h| write_canonical(&Value::from(model), h));
    field("metric", &mut |h| {
        write_canonical(&Value::from(request.metric.as_str()), h)
    });
    // Messages serialise in a fixed field order (derived), so they are canonical
    // already; streaming them avoids copying large image payloads.
    field("messages", &mut |h| {
        let _ = serde_json::to_writer(HashWriter(h), &request.messages);
    });
    field("schema", &mut |h| write_canonical(&request.schema, h));
    field("params", &mut |h| {
        write_canonical(
            &serde_json::json!({"temperature": 0, "seed": seed, "max_tokens": max_tokens}),
            h,
        )
    });
    field("sample", &mut |h| h.update(request.sample.to_le_bytes()));
    hex::encode(hasher.finalize())
}

struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serialise with sorted keys straight into the hasher (no big intermediate string;
/// keys and scalars are written by serde_json into the hasher, not allocated first).
fn write_canonical(value: &Value, out: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.update(b"{");
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                let _ = serde_json::to_writer(HashWriter(&mut *out), k);
                out.update(b":");
                write_canonical(v, out);
            }
            out.update(b"}");
        }
        Value::Array(items) => {
            out.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                write_canonical(item, out);
            }
            out.update(b"]");
        }
        other => {
            let _ = serde_json::to_writer(HashWriter(&mut *out), other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, Part, Role};
    use serde_json::json;

    fn req(schema: Value, sample: u32, report: &str) -> JudgeRequest {
        JudgeRequest {
            metric: "citation_support".into(),
            report: report.into(),
            unit: "fact:1".into(),
            messages: vec![Message {
                role: Role::User,
                parts: vec![Part::Text { text: "q".into() }],
            }],
            schema,
            sample,
        }
    }

    #[test]
    fn key_ignores_labels_and_key_order_but_not_content() {
        let a = req(json!({"type": "object", "properties": {}}), 0, "sys/1");
        let b = req(json!({"properties": {}, "type": "object"}), 0, "other/9");
        assert_eq!(
            cache_key("m", &a, None, None),
            cache_key("m", &b, None, None)
        );
        let k = cache_key("m", &a, None, None);
        assert_eq!(k.len(), 64);
        assert_ne!(k, cache_key("m2", &a, None, None));
        assert_ne!(k, cache_key("m", &a, Some(1), None));
        assert_ne!(k, cache_key("m", &a, None, Some(100)));
        assert_ne!(
            k,
            cache_key("m", &req(json!({"type": "object"}), 0, "x"), None, None)
        );
        assert_ne!(
            k,
            cache_key(
                "m",
                &req(json!({"type": "object", "properties": {}}), 1, "x"),
                None,
                None
            )
        );
        let mut c = a.clone();
        c.messages[0].parts.push(Part::Text {
            text: "more".into(),
        });
        assert_ne!(k, cache_key("m", &c, None, None));
    }
}
