//! Token generation behind the [`crate::Backend`] trait: one request is one sequence, and a
//! [`Generator`] advances all of its sequences together, one step at a time, so that a runtime
//! can batch them (continuous batching: a sequence admitted between two steps joins the next).
//!
//! The server drives a generator from the model's own thread:
//!
//! 1. [`Generator::admit`] each newly arrived request (cheap: tokenise, check limits);
//! 2. [`Generator::cancel`] what was cancelled;
//! 3. [`Generator::step`] once, forwarding each [`SequenceEvent`] to its client;
//! 4. repeat while [`Generator::active`] is non-zero, else block for the next request.
//!
//! A runtime that computes elsewhere (an external OpenAI-compatible server) implements `step`
//! by waiting a short while for whatever its in-flight streams produced.

use crate::BackendError;

/// Identifies one sequence within one generator; chosen by the caller, unique among the
/// sequences it has admitted and not yet seen finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SequenceId(pub u64);

/// One chat turn, rendered through the model's chat template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant`, … as the template expects.
    pub role: String,
    /// The turn's text.
    pub content: String,
}

/// What the sequence starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// Raw text, tokenised as is (special-token text such as `<|im_start|>` is recognised).
    Text(String),
    /// Chat turns, rendered with the model's chat template and its generation prompt.
    Messages(Vec<ChatMessage>),
}

/// How the next token is chosen from the logits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// 0 is greedy (argmax); otherwise logits are divided by it before the softmax.
    pub temperature: f32,
    /// Nucleus sampling: keep the smallest set of tokens whose probability reaches `top_p`.
    pub top_p: f32,
    /// Keep only the `top_k` most likely tokens; 0 keeps all.
    pub top_k: usize,
    /// Drop tokens less likely than `min_p` times the likeliest one; 0 keeps all.
    pub min_p: f32,
    /// Logits of tokens already in the prompt or the output are divided by it when positive
    /// and multiplied when negative (transformers' `RepetitionPenaltyLogitsProcessor`); 1 is off.
    pub repetition_penalty: f32,
    /// Seeds the sequence's own random stream, so equal requests give equal tokens.
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            seed: 0,
        }
    }
}

/// One `generate` request, validated by the server.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateRequest {
    /// What to continue.
    pub prompt: Prompt,
    /// Most tokens to generate, at least 1.
    pub max_tokens: usize,
    /// Token choice.
    pub sampling: Sampling,
    /// Generation ends before the first occurrence of any of these; it is not returned.
    pub stop: Vec<String>,
    /// The LoRA adapter, loaded with [`Generator::load_adapter`], the sequence runs with;
    /// `None` runs the base model.
    pub adapter: Option<String>,
}

/// What a loaded adapter tells its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdapterInfo {
    /// The adapter's rank `r`.
    pub rank: usize,
    /// Bytes its matrices take on the device.
    pub memory_bytes: u64,
}

/// Why a sequence ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model produced an end-of-sequence token, or a stop string appeared.
    Stop,
    /// `max_tokens` were generated.
    Length,
    /// The client cancelled it or went away.
    Cancelled,
}

impl FinishReason {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Cancelled => "cancelled",
        }
    }
}

/// What a step produced for one sequence. Every admitted sequence yields zero or more
/// `Tokens` and then exactly one `Done` or `Failed`, after which the generator forgets it.
#[derive(Debug, Clone, PartialEq)]
pub enum SequenceEvent {
    /// New text, always whole UTF-8 characters, with text that might begin a stop string held
    /// back until it is known not to; `token_ids` are the tokens consumed since the previous
    /// event (they may not map one-to-one onto `text`).
    Tokens {
        /// Decoded text.
        text: String,
        /// Token ids behind it.
        token_ids: Vec<u32>,
    },
    /// The sequence ended normally or was cancelled.
    Done {
        /// Why.
        finish_reason: FinishReason,
        /// Tokens in the prompt as the model saw it (template and special tokens included).
        prompt_tokens: usize,
        /// Tokens generated, including an end-of-sequence token.
        completion_tokens: usize,
    },
    /// The sequence could not continue (a broken device, a bug).
    Failed(BackendError),
}

/// A model that generates text. Driven from one thread: methods take `&self` and an
/// implementation keeps its mutable state (KV caches, sequences) behind a `RefCell` or similar.
pub trait Generator {
    /// Longest sequence, prompt plus generated tokens, the model handles.
    fn context_tokens(&self) -> usize;

    /// Prepares a sequence. Fails, and admits nothing, on a prompt that cannot run: one whose
    /// tokens plus `max_tokens` exceed [`Generator::context_tokens`]
    /// ([`BackendError::InputTooLong`]), messages for a model without a chat template
    /// ([`BackendError::Unsupported`]). Returns the prompt's token count. Its first tokens
    /// come from a later [`Generator::step`].
    fn admit(&self, id: SequenceId, request: GenerateRequest) -> Result<usize, BackendError>;

    /// Drops sequence `id` now. Returns its `Done` event with
    /// [`FinishReason::Cancelled`], or `None` when it is not (or no longer) active.
    fn cancel(&self, id: SequenceId) -> Option<SequenceEvent>;

    /// Number of admitted sequences that have not finished.
    fn active(&self) -> usize;

    /// Advances every active sequence by one token (a newly admitted one first reads its
    /// prompt) and returns what each produced; sequences without news are left out.
    fn step(&self) -> Vec<(SequenceId, SequenceEvent)>;

    /// Loads the LoRA adapter in directory `dir` under `name`, for requests that name it.
    /// Fails with [`BackendError::AdapterExists`] when `name` is taken, with
    /// [`BackendError::InvalidAdapter`] when the files do not fit the model, and (the default)
    /// with [`BackendError::Unsupported`] on a runtime without adapters.
    fn load_adapter(&self, name: &str, dir: &std::path::Path) -> Result<AdapterInfo, BackendError> {
        let _ = (name, dir);
        Err(BackendError::Unsupported(
            "this runtime does not load LoRA adapters".into(),
        ))
    }

    /// Forgets adapter `name`: new requests cannot name it, sequences already running with it
    /// finish with it.
    fn unload_adapter(&self, name: &str) -> Result<(), BackendError> {
        Err(BackendError::AdapterNotFound(name.to_owned()))
    }
}
