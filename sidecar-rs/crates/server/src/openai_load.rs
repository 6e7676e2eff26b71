//! The `openai` map of `load`: where the remote runtime is and what it serves.

use shoal_sidecar_openai::{OpenAiConfig, OpenAiSettings};

use crate::error::{ErrorCode, ProtocolError};
use crate::msgpack::{Item, Malformed, Reader};
use crate::request::values::{count, string, wrong_type};

/// Reads the map. Like `sim`, it is closed configuration: an unknown key is refused, since a
/// misspelt `timeout_ms` silently replaced by its default would surface only under load.
pub(crate) fn settings<'a>(
    r: &mut Reader<'a>,
    value: Item<'a>,
) -> Result<OpenAiSettings, ProtocolError> {
    let Item::Map(len) = value else {
        return Err(wrong_type("openai", "a map", value));
    };
    let broken = |e: Malformed| ProtocolError::new(ErrorCode::BadFrame, e.to_string());
    let mut out = OpenAiSettings::default();
    for _ in 0..len {
        let key = match r.next().map_err(broken)? {
            Item::Str(key) => key,
            other => {
                return Err(ProtocolError::bad_request(format!(
                    "`openai` keys must be strings, got {}",
                    other.type_name()
                )));
            }
        };
        let value = r.next().map_err(broken)?;
        if value == Item::Nil {
            continue;
        }
        let text = |field: &str| string(field, value).map(str::to_owned);
        match key {
            b"url" => out.url = Some(text("openai.url")?),
            b"remote_model" => out.remote_model = Some(text("openai.remote_model")?),
            b"family" => out.family = Some(text("openai.family")?),
            b"api_key" => out.api_key = Some(text("openai.api_key")?),
            b"timeout_ms" => out.timeout_ms = Some(count("openai.timeout_ms", value)?),
            b"max_input_tokens" => {
                out.max_input_tokens = Some(count("openai.max_input_tokens", value)?)
            }
            other => {
                return Err(ProtocolError::bad_request(format!(
                    "unknown `openai` field `{}`; expected url, remote_model, family, api_key, \
                     timeout_ms or max_input_tokens",
                    String::from_utf8_lossy(other).escape_debug()
                )));
            }
        }
    }
    Ok(out)
}

/// Validates the settings into a config, as a `bad_request` naming the field when wrong.
pub(crate) fn resolve(settings: OpenAiSettings) -> Result<OpenAiConfig, ProtocolError> {
    settings.resolve().map_err(ProtocolError::from)
}
