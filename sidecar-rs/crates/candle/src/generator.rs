//! A generative Llama-family model as a [`Backend`] with a [`Generator`]: sequences are
//! admitted between steps and every step is one batched forward pass over all of them
//! (continuous batching). A long prompt is read in pieces of [`PREFILL_CHUNK`] tokens so that
//! a new arrival delays the sequences already decoding by one bounded step, never by its whole
//! prompt, and the attention scores of one pass stay small.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device};
use shoal_sidecar_core::text::{INPUT_BYTES_PER_TOKEN, prefix_at_char_boundary};
use shoal_sidecar_core::{
    AdapterInfo, Backend, BackendError, EmbedBatch, Embeddings, FinishReason, GenerateRequest,
    Generator, ModelFamily, Prompt, Sampling, SequenceEvent, SequenceId, StopFilter,
};

use crate::LoadError;
use crate::detokenize::Utf8Stream;
use crate::gguf::Gguf;
use crate::models::llama::{Chunk, GgufWeightMode, KvCache, Llama};
use crate::models::lora::LoraAdapter;
use crate::sampling::{Rng, penalize_repeats, sample};
use crate::vocab::Vocab;
use crate::weights::CountedSafetensors;

/// Most prompt tokens one sequence reads in one step.
pub const PREFILL_CHUNK: usize = 512;
/// Most tokens one forward pass reads over all sequences; decoding sequences (one token each)
/// always fit, prompts share what is left.
const TOKENS_PER_STEP: usize = 2048;

/// A Llama-family model ready to generate.
pub struct LlamaGenerator {
    model: Llama,
    vocab: Vocab,
    memory_bytes: u64,
    context: usize,
    sequences: RefCell<BTreeMap<SequenceId, Sequence>>,
    /// Loaded LoRA adapters by name. A sequence holds its own reference, so unloading one
    /// lets the sequences already running with it finish.
    adapters: RefCell<HashMap<String, Arc<LoraAdapter>>>,
}

impl std::fmt::Debug for LlamaGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaGenerator")
            .field("config", self.model.config())
            .field("memory_bytes", &self.memory_bytes)
            .finish_non_exhaustive()
    }
}

struct Sequence {
    cache: KvCache,
    /// Tokens the model has not read yet: the prompt at first, then the last sampled token.
    unread: Vec<u32>,
    prompt_tokens: usize,
    generated: usize,
    max_tokens: usize,
    sampling: Sampling,
    /// Tokens of the prompt and the output, kept only when a repetition penalty needs them.
    seen: HashSet<u32>,
    rng: Rng,
    utf8: Utf8Stream,
    stop: StopFilter,
    /// Generated ids not yet reported in a `Tokens` event.
    unreported: Vec<u32>,
    adapter: Option<Arc<LoraAdapter>>,
}

/// What a sampled token did to its sequence.
enum Outcome {
    Continue(Option<SequenceEvent>),
    Finished(Vec<SequenceEvent>),
}

impl LlamaGenerator {
    /// Loads a GGUF file (`general.architecture` must be `llama`), its matrices held as `mode`
    /// says.
    pub fn load_gguf(
        path: &Path,
        device: &Device,
        mode: GgufWeightMode,
    ) -> Result<Self, LoadError> {
        let mut gguf = Gguf::open(path)?;
        let architecture = gguf.str("general.architecture")?;
        if architecture != "llama" {
            return Err(LoadError::Unsupported(format!(
                "{}: general.architecture `{architecture}`; supported: llama",
                path.display()
            )));
        }
        let vocab = Vocab::from_gguf(&gguf)?;
        let (model, memory_bytes) = Llama::from_gguf(&mut gguf, device, mode)?;
        Self::new(model, vocab, memory_bytes)
    }

    /// Loads a transformers `LlamaForCausalLM` directory (`config.json`, `tokenizer.json`,
    /// `model.safetensors` in f32, f16 or bf16; computed in f32).
    pub fn load_dir(
        dir: &Path,
        config: serde_json::Value,
        device: &Device,
    ) -> Result<Self, LoadError> {
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(LoadError::Io {
                path: weights,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "weights load from safetensors only",
                ),
            });
        }
        let vocab = Vocab::from_dir(dir, &config)?;
        let (vb, loaded) = CountedSafetensors::var_builder(&weights, DType::F32, device)?;
        let model = Llama::from_hf(config, vb, device)?;
        let memory_bytes = loaded.load(std::sync::atomic::Ordering::Relaxed);
        Self::new(model, vocab, memory_bytes)
    }

    fn new(model: Llama, vocab: Vocab, memory_bytes: u64) -> Result<Self, LoadError> {
        let config = model.config();
        if vocab.len() > config.vocab_size {
            return Err(LoadError::Unsupported(format!(
                "the tokenizer has {} tokens but the model only {}",
                vocab.len(),
                config.vocab_size
            )));
        }
        let context = config.max_position_embeddings;
        Ok(Self {
            model,
            vocab,
            memory_bytes,
            context,
            sequences: RefCell::new(BTreeMap::new()),
            adapters: RefCell::new(HashMap::new()),
        })
    }

    /// The prompt's token ids, as the model will read them.
    pub fn tokenize(&self, prompt: &Prompt) -> Result<Vec<u32>, BackendError> {
        let (text, templated) = match prompt {
            Prompt::Text(text) => (text.clone(), false),
            Prompt::Messages(messages) => {
                let template = self.vocab.chat_template.as_ref().ok_or_else(|| {
                    BackendError::Unsupported(
                        "this model has no chat template; send `prompt` instead of `messages`"
                            .into(),
                    )
                })?;
                (
                    template
                        .render(messages)
                        .map_err(BackendError::Unsupported)?,
                    true,
                )
            }
        };
        // Tokenising costs tens of bytes of memory per input byte; text longer than the
        // context could ever hold is refused before that cost is paid.
        let max_bytes = self.context.saturating_mul(INPUT_BYTES_PER_TOKEN);
        if prefix_at_char_boundary(&text, max_bytes).len() < text.len() {
            return Err(BackendError::InputTooLong {
                index: 0,
                max: self.context,
            });
        }
        self.vocab
            .encode(&text, templated)
            .map_err(BackendError::Tokenizer)
    }

    /// Teacher forcing, for the golden tests: the logits after reading `prompt`, then after
    /// each token of `forced` in turn (fed through the KV cache as decoding does), whatever
    /// the model would have picked itself, with the loaded adapter `adapter` if one is named.
    /// Returns `forced.len() + 1` rows.
    pub fn teacher_forced_logits(
        &self,
        prompt: &[u32],
        forced: &[u32],
        adapter: Option<&str>,
    ) -> Result<Vec<Vec<f32>>, BackendError> {
        let adapter = adapter.map(|name| self.adapter(name)).transpose()?;
        let mut cache = KvCache::default();
        let mut rows = Vec::with_capacity(forced.len() + 1);
        for tokens in std::iter::once(prompt).chain(forced.chunks(1)) {
            let mut out = self.forward(&mut [Chunk {
                tokens,
                cache: &mut cache,
                adapter: adapter.as_deref(),
            }])?;
            rows.push(out.pop().unwrap_or_default());
        }
        Ok(rows)
    }

    /// The loaded adapter `name`.
    fn adapter(&self, name: &str) -> Result<Arc<LoraAdapter>, BackendError> {
        self.adapters
            .borrow()
            .get(name)
            .cloned()
            .ok_or_else(|| BackendError::AdapterNotFound(name.to_owned()))
    }

    fn forward(&self, chunks: &mut [Chunk<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        self.model
            .forward(chunks)
            .and_then(|logits| logits.to_vec2::<f32>())
            .map_err(|e| BackendError::Inference(e.to_string()))
    }

    /// Samples the next token of `seq` from `logits` and turns it into events.
    fn advance(&self, seq: &mut Sequence, logits: &[f32]) -> Outcome {
        // Ids past the tokenizer's vocabulary (padding rows of the embedding) print nothing
        // and must never be sampled.
        let usable = &logits[..self.vocab.len().min(logits.len())];
        let token = if seq.sampling.repetition_penalty == 1.0 {
            sample(usable, &seq.sampling, &mut seq.rng)
        } else {
            let mut penalized = usable.to_vec();
            penalize_repeats(&mut penalized, &seq.seen, seq.sampling.repetition_penalty);
            let token = sample(&penalized, &seq.sampling, &mut seq.rng);
            seq.seen.insert(token);
            token
        };
        seq.generated += 1;
        if self.vocab.eos.contains(&token) {
            return Outcome::Finished(self.finish(seq, FinishReason::Stop, true));
        }
        seq.unreported.push(token);
        let bytes = &self.vocab.token_bytes[token as usize];
        let text = seq.utf8.push(bytes);
        let released = seq.stop.push(&text);
        if released.stopped {
            let tokens = SequenceEvent::Tokens {
                text: released.text,
                token_ids: std::mem::take(&mut seq.unreported),
            };
            return Outcome::Finished(vec![tokens, self.done(seq, FinishReason::Stop)]);
        }
        if seq.generated >= seq.max_tokens {
            let mut events = self.finish(seq, FinishReason::Length, true);
            if let Some(SequenceEvent::Tokens { text: tail, .. }) = events.first_mut() {
                tail.insert_str(0, &released.text);
            } else if !released.text.is_empty() {
                events.insert(
                    0,
                    SequenceEvent::Tokens {
                        text: released.text,
                        token_ids: Vec::new(),
                    },
                );
            }
            return Outcome::Finished(events);
        }
        seq.unread = vec![token];
        if released.text.is_empty() {
            return Outcome::Continue(None);
        }
        Outcome::Continue(Some(SequenceEvent::Tokens {
            text: released.text,
            token_ids: std::mem::take(&mut seq.unreported),
        }))
    }

    /// The last events of a sequence that ends for `reason`; with `flush`, text held back for
    /// an incomplete character or a possible stop string is released first.
    fn finish(&self, seq: &mut Sequence, reason: FinishReason, flush: bool) -> Vec<SequenceEvent> {
        let mut events = Vec::new();
        if flush {
            let mut text = seq.stop.push(&seq.utf8.finish()).text;
            text.push_str(&seq.stop.flush());
            if !text.is_empty() || !seq.unreported.is_empty() {
                events.push(SequenceEvent::Tokens {
                    text,
                    token_ids: std::mem::take(&mut seq.unreported),
                });
            }
        }
        events.push(self.done(seq, reason));
        events
    }

    fn done(&self, seq: &Sequence, finish_reason: FinishReason) -> SequenceEvent {
        SequenceEvent::Done {
            finish_reason,
            prompt_tokens: seq.prompt_tokens,
            completion_tokens: seq.generated,
        }
    }
}

impl Generator for LlamaGenerator {
    fn context_tokens(&self) -> usize {
        self.context
    }

    fn admit(&self, id: SequenceId, request: GenerateRequest) -> Result<usize, BackendError> {
        let adapter = request
            .adapter
            .as_deref()
            .map(|name| self.adapter(name))
            .transpose()?;
        let prompt = self.tokenize(&request.prompt)?;
        if prompt.is_empty() {
            return Err(BackendError::Unsupported(
                "the prompt has no tokens (and the model adds no BOS token)".into(),
            ));
        }
        if prompt.len().saturating_add(request.max_tokens) > self.context {
            return Err(BackendError::InputTooLong {
                index: 0,
                max: self.context.saturating_sub(request.max_tokens),
            });
        }
        let prompt_tokens = prompt.len();
        let seen = if request.sampling.repetition_penalty == 1.0 {
            HashSet::new()
        } else {
            prompt.iter().copied().collect()
        };
        let seq = Sequence {
            cache: KvCache::default(),
            unread: prompt,
            prompt_tokens,
            generated: 0,
            max_tokens: request.max_tokens.max(1),
            rng: Rng::new(request.sampling.seed),
            sampling: request.sampling,
            seen,
            utf8: Utf8Stream::default(),
            stop: StopFilter::new(request.stop),
            unreported: Vec::new(),
            adapter,
        };
        self.sequences.borrow_mut().insert(id, seq);
        Ok(prompt_tokens)
    }

    fn cancel(&self, id: SequenceId) -> Option<SequenceEvent> {
        let seq = self.sequences.borrow_mut().remove(&id)?;
        Some(self.done(&seq, FinishReason::Cancelled))
    }

    fn active(&self) -> usize {
        self.sequences.borrow().len()
    }

    fn step(&self) -> Vec<(SequenceId, SequenceEvent)> {
        let mut sequences = self.sequences.borrow_mut();
        // Decoding sequences first (one token each), then prompts in arrival order with what
        // is left of the step's budget; a prompt that does not fit waits for the next step.
        let mut budget = TOKENS_PER_STEP;
        let mut plan: Vec<(SequenceId, usize)> = Vec::new();
        for (&id, seq) in sequences.iter() {
            if seq.unread.len() == 1 {
                plan.push((id, 1));
                budget = budget.saturating_sub(1);
            }
        }
        for (&id, seq) in sequences.iter() {
            let n = seq.unread.len();
            if n > 1 {
                let take = n.min(PREFILL_CHUNK).min(budget);
                if take == 0 {
                    break;
                }
                plan.push((id, take));
                budget -= take;
            }
        }
        if plan.is_empty() {
            return Vec::new();
        }

        let ids: Vec<SequenceId> = plan.iter().map(|&(id, _)| id).collect();
        let logits = {
            let mut taken: Vec<(SequenceId, Sequence)> = ids
                .iter()
                .filter_map(|id| sequences.remove(id).map(|s| (*id, s)))
                .collect();
            let mut chunks: Vec<Chunk<'_>> = taken
                .iter_mut()
                .zip(&plan)
                .map(|((_, seq), &(_, take))| Chunk {
                    tokens: &seq.unread[..take],
                    cache: &mut seq.cache,
                    adapter: seq.adapter.as_deref(),
                })
                .collect();
            let logits = self.forward(&mut chunks);
            drop(chunks);
            for ((id, mut seq), &(_, take)) in taken.into_iter().zip(&plan) {
                seq.unread.drain(..take);
                sequences.insert(id, seq);
            }
            logits
        };

        let mut events = Vec::new();
        match logits {
            Err(e) => {
                for id in ids {
                    sequences.remove(&id);
                    events.push((id, SequenceEvent::Failed(e.clone())));
                }
            }
            Ok(rows) => {
                for (id, row) in ids.into_iter().zip(rows) {
                    let Some(seq) = sequences.get_mut(&id) else {
                        continue;
                    };
                    if !seq.unread.is_empty() {
                        // Still reading its prompt; these logits are not a prediction yet.
                        continue;
                    }
                    match self.advance(seq, &row) {
                        Outcome::Continue(event) => events.extend(event.map(|e| (id, e))),
                        Outcome::Finished(done) => {
                            sequences.remove(&id);
                            events.extend(done.into_iter().map(|e| (id, e)));
                        }
                    }
                }
            }
        }
        events
    }

    fn load_adapter(&self, name: &str, dir: &Path) -> Result<AdapterInfo, BackendError> {
        if self.adapters.borrow().contains_key(name) {
            return Err(BackendError::AdapterExists(name.to_owned()));
        }
        let adapter = LoraAdapter::load(dir, self.model.config(), self.model.device())
            .map_err(|e| BackendError::InvalidAdapter(e.to_string()))?;
        let info = AdapterInfo {
            rank: adapter.rank(),
            memory_bytes: adapter.memory_bytes(),
        };
        self.adapters
            .borrow_mut()
            .insert(name.to_owned(), Arc::new(adapter));
        Ok(info)
    }

    fn unload_adapter(&self, name: &str) -> Result<(), BackendError> {
        self.adapters
            .borrow_mut()
            .remove(name)
            .map(drop)
            .ok_or_else(|| BackendError::AdapterNotFound(name.to_owned()))
    }
}

impl Backend for LlamaGenerator {
    fn family(&self) -> ModelFamily {
        ModelFamily::Generate
    }

    /// The vocabulary size: the width of the logits.
    fn dim(&self) -> usize {
        self.model.config().vocab_size
    }

    fn max_input_tokens(&self) -> usize {
        self.context
    }

    fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    fn health(&self) -> Result<(), BackendError> {
        let mut cache = KvCache::default();
        let rows = self.forward(&mut [Chunk {
            tokens: &[0],
            cache: &mut cache,
            adapter: None,
        }])?;
        if rows.iter().flatten().all(|v| v.is_finite()) {
            Ok(())
        } else {
            Err(BackendError::Inference(
                "the health probe produced non-finite logits".into(),
            ))
        }
    }

    fn embed(&self, _batch: &EmbedBatch) -> Result<Embeddings, BackendError> {
        Err(BackendError::unsupported(ModelFamily::Generate, "embed"))
    }

    fn generator(&self) -> Option<&dyn Generator> {
        Some(self)
    }
}
