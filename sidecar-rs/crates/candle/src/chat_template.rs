//! Chat templates: the Jinja program a model ships (`tokenizer.chat_template` in GGUF,
//! `chat_template` in `tokenizer_config.json`) that turns chat turns into the prompt text the
//! model was trained on. Rendered with MiniJinja configured as Hugging Face's
//! `apply_chat_template` configures Jinja2 (`trim_blocks`, `lstrip_blocks`), with the same
//! variables: `messages`, `add_generation_prompt`, `bos_token`, `eos_token`, and the
//! `raise_exception` function templates use to refuse a conversation.

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, Error, ErrorKind, Value, context};
use shoal_sidecar_core::ChatMessage;

use crate::LoadError;

/// Most bytes a template may render; a template looping over a long conversation stays far
/// below, a hostile one that loops forever is stopped here (with the fuel limit below).
const MAX_RENDERED_BYTES: usize = 4 << 20;
/// Template instructions one render may execute.
const FUEL: u64 = 5_000_000;

/// A compiled chat template.
pub(crate) struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// Compiles `source`; a syntax error fails the model's load.
    pub(crate) fn new(
        source: &str,
        bos_token: String,
        eos_token: String,
    ) -> Result<Self, LoadError> {
        let mut env = Environment::new();
        env.set_syntax(
            SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .map_err(|e| LoadError::Unsupported(format!("chat template syntax: {e}")))?,
        );
        env.set_fuel(Some(FUEL));
        env.add_function(
            "raise_exception",
            |message: String| -> Result<String, Error> {
                Err(Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned("chat", source.to_owned())
            .map_err(|e| LoadError::Unsupported(format!("chat template does not compile: {e}")))?;
        Ok(Self {
            env,
            bos_token,
            eos_token,
        })
    }

    /// The prompt for `messages`, ending with the assistant's generation prompt.
    pub(crate) fn render(&self, messages: &[ChatMessage]) -> Result<String, String> {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                Value::from_pairs([
                    ("role", Value::from(m.role.as_str())),
                    ("content", Value::from(m.content.as_str())),
                ])
            })
            .collect();
        let template = self
            .env
            .get_template("chat")
            .map_err(|e| format!("chat template: {e}"))?;
        let rendered = template
            .render(context! {
                messages => messages,
                add_generation_prompt => true,
                bos_token => &self.bos_token,
                eos_token => &self.eos_token,
            })
            .map_err(|e| format!("chat template refused the messages: {e}"))?;
        if rendered.len() > MAX_RENDERED_BYTES {
            return Err(format!(
                "the chat template rendered {} bytes, more than {MAX_RENDERED_BYTES}",
                rendered.len()
            ));
        }
        Ok(rendered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, content: &str) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }

    #[test]
    fn renders_a_chatml_template_with_the_generation_prompt() {
        let t = ChatTemplate::new(
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}\
             {% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
            "<s>".into(),
            "</s>".into(),
        )
        .unwrap();
        assert_eq!(
            t.render(&[msg("user", "héllo")]).unwrap(),
            "<|im_start|>user\nhéllo<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn block_tags_do_not_leave_newlines_like_jinja2_in_transformers() {
        let t = ChatTemplate::new(
            "{{ bos_token }}\n{% for m in messages %}\n  {{ m.content }}\n{% endfor %}\n",
            "<s>".into(),
            String::new(),
        )
        .unwrap();
        assert_eq!(t.render(&[msg("user", "a")]).unwrap(), "<s>\n  a\n");
    }

    #[test]
    fn raise_exception_and_runaway_templates_are_errors() {
        let t = ChatTemplate::new(
            "{% if messages[0].role != 'user' %}{{ raise_exception('first turn must be user') }}{% endif %}",
            String::new(),
            String::new(),
        )
        .unwrap();
        let err = t.render(&[msg("assistant", "x")]).unwrap_err();
        assert!(err.contains("first turn must be user"), "{err}");

        let t = ChatTemplate::new(
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
            String::new(),
            String::new(),
        )
        .unwrap();
        assert!(t.render(&[]).is_err());

        assert!(ChatTemplate::new("{% for %}", String::new(), String::new()).is_err());
    }
}
