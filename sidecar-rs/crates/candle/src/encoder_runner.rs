//! What every encoder model shares, whatever follows it (pooling or a task head): its
//! tokenizer and its encoder on one device. Inputs are capped, tokenised and run in forward
//! passes of similar lengths here; the embedding backend and the task heads only read the
//! hidden states.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use shoal_sidecar_core::text::{INPUT_BYTES_PER_TOKEN, prefix_at_char_boundary};
use shoal_sidecar_core::{BackendError, EmbedBatch, Input, PairBatch, check_token_ids};
use tokenizers::{
    EncodeInput, Encoding, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy,
};

use crate::LoadError;
use crate::models::Encoder;

/// Most padded tokens (rows × longest row) one forward pass may hold. Attention scores grow with
/// rows × heads × seq², so a large batch of long inputs is cut into several passes rather than
/// allocating gigabytes at once.
const TOKENS_PER_FORWARD: usize = 8192;

/// A row of the batch after tokenisation.
pub(crate) struct Tokenized {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    /// Code-point offsets of each token into its input; only filled for `extract`.
    pub offsets: Vec<(usize, usize)>,
    /// 1 for special tokens (`[CLS]`, `[SEP]`); only filled for `extract`.
    pub special: Vec<u32>,
}

/// An encoder and the tokenizer that feeds it.
pub(crate) struct EncoderRunner {
    encoder: Box<dyn Encoder>,
    tokenizer: Tokenizer,
    device: Device,
    max_input_tokens: usize,
    pad_id: u32,
}

impl EncoderRunner {
    /// `encoder` on `device`, fed by the `tokenizer.json` in `dir`, cutting inputs at
    /// `max_input_tokens`.
    pub(crate) fn new(
        dir: &Path,
        encoder: Box<dyn Encoder>,
        device: &Device,
        max_input_tokens: usize,
    ) -> Result<Self, LoadError> {
        let tokenizer_path = dir.join("tokenizer.json");
        if !tokenizer_path.is_file() {
            return Err(LoadError::Io {
                path: tokenizer_path,
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no tokenizer.json"),
            });
        }
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| LoadError::Tokenizer(format!("{}: {e}", tokenizer_path.display())))?;
        let pad_id = tokenizer.get_padding().map_or(0, |p| p.pad_id);
        // tokenizer.json often carries the exporter's own truncation and fixed padding (128 for
        // MiniLM); the model's real limit comes from sentence-transformers, and padding is done
        // here per forward pass so that every row keeps its true length.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_input_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| LoadError::Tokenizer(e.to_string()))?;

        Ok(Self {
            encoder,
            tokenizer,
            device: device.clone(),
            max_input_tokens,
            pad_id,
        })
    }

    pub(crate) fn device(&self) -> &Device {
        &self.device
    }

    pub(crate) fn max_input_tokens(&self) -> usize {
        self.max_input_tokens
    }

    /// Runs the encoder over `rows` (all no longer than `seq_len`, padded to it) and returns
    /// the hidden states `[rows, seq_len, hidden]` with the attention mask `[rows, seq_len]`.
    fn encode(&self, rows: &[&Tokenized], seq_len: usize) -> candle_core::Result<(Tensor, Tensor)> {
        let n = rows.len();
        let mut ids = Vec::with_capacity(n * seq_len);
        let mut type_ids = Vec::with_capacity(n * seq_len);
        let mut mask = Vec::with_capacity(n * seq_len);
        for row in rows {
            let pad = seq_len - row.ids.len();
            ids.extend_from_slice(&row.ids);
            ids.extend(std::iter::repeat_n(self.pad_id, pad));
            type_ids.extend_from_slice(&row.type_ids);
            type_ids.extend(std::iter::repeat_n(0, pad));
            mask.extend(std::iter::repeat_n(1f32, row.ids.len()));
            mask.extend(std::iter::repeat_n(0f32, pad));
        }
        let ids = Tensor::from_vec(ids, (n, seq_len), &self.device)?;
        let type_ids = Tensor::from_vec(type_ids, (n, seq_len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, seq_len), &self.device)?;
        let lengths: Vec<usize> = rows.iter().map(|row| row.ids.len()).collect();

        // Pooling and heads run in f32 whatever the encoder computed in.
        let hidden = self
            .encoder
            .forward(&ids, &type_ids, &lengths)?
            .to_dtype(DType::F32)?;
        Ok((hidden, mask))
    }

    /// Cuts every input at [`INPUT_BYTES_PER_TOKEN`] bytes per allowed token, returning the
    /// kept prefix and whether anything was cut.
    fn cap<'a>(&self, input: &'a str) -> (&'a str, bool) {
        let max_bytes = self.max_input_tokens.saturating_mul(INPUT_BYTES_PER_TOKEN);
        let kept = prefix_at_char_boundary(input, max_bytes);
        (kept, kept.len() < input.len())
    }

    /// Tokenises `inputs` (single texts or pairs), already capped.
    fn encode_texts<'s, E>(
        &self,
        inputs: Vec<E>,
        char_offsets: bool,
    ) -> Result<Vec<Encoding>, BackendError>
    where
        E: Into<EncodeInput<'s>> + Send,
    {
        if char_offsets {
            self.tokenizer.encode_batch_char_offsets(inputs, true)
        } else {
            self.tokenizer.encode_batch_fast(inputs, true)
        }
        .map_err(|e| BackendError::Tokenizer(e.to_string()))
    }

    /// Input `index`'s token ids as an encoding, after checking each against the vocabulary:
    /// cut to the model's limit and wrapped in its special tokens, as a text's ids are.
    fn encode_ids(&self, index: usize, ids: &[u32]) -> Result<Encoding, BackendError> {
        check_token_ids(index, ids, self.tokenizer.get_vocab_size(true))?;
        let n = ids.len();
        let encoding = Encoding::new(
            ids.to_vec(),
            vec![0; n],
            vec![String::new(); n],
            vec![None; n],
            vec![(0, 0); n],
            vec![0; n],
            vec![1; n],
            Vec::new(),
            Default::default(),
        );
        self.tokenizer
            .post_process(encoding, None, true)
            .map_err(|e| BackendError::Tokenizer(e.to_string()))
    }

    /// Rows from `encodings`, in batch order; `cut[i]` says whether input `i` was already
    /// capped before tokenisation. The one place truncation is decided: with `truncate` off, a
    /// cut input fails the batch.
    fn rows(
        &self,
        encodings: Vec<Encoding>,
        cut: &[bool],
        truncate: bool,
        char_offsets: bool,
    ) -> Result<(Vec<Tokenized>, Vec<bool>), BackendError> {
        let mut rows = Vec::with_capacity(encodings.len());
        let mut truncated = Vec::with_capacity(encodings.len());
        for (index, encoding) in encodings.into_iter().enumerate() {
            // With stride 0, truncation moves the cut-off tail into `overflowing`; nothing else
            // fills it, so a non-empty list means exactly "this input was cut".
            let was_cut = cut[index] || !encoding.get_overflowing().is_empty();
            if was_cut && !truncate {
                return Err(BackendError::InputTooLong {
                    index,
                    max: self.max_input_tokens,
                });
            }
            truncated.push(was_cut);
            let (offsets, special) = if char_offsets {
                (
                    encoding.get_offsets().to_vec(),
                    encoding.get_special_tokens_mask().to_vec(),
                )
            } else {
                (Vec::new(), Vec::new())
            };
            rows.push(Tokenized {
                ids: encoding.get_ids().to_vec(),
                type_ids: encoding.get_type_ids().to_vec(),
                offsets,
                special,
            });
        }
        Ok((rows, truncated))
    }

    /// Runs `rows` through the encoder in forward passes of at most [`TOKENS_PER_FORWARD`]
    /// padded tokens, longest rows first so that each pass pads its rows to a similar length.
    /// `each` gets the indices of a pass's rows, in pass order, with their hidden states and
    /// attention mask.
    pub(crate) fn passes(
        &self,
        rows: &[Tokenized],
        mut each: impl FnMut(&[usize], Tensor, Tensor) -> candle_core::Result<()>,
    ) -> Result<(), BackendError> {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(rows[i].ids.len()));
        let mut start = 0;
        while start < order.len() {
            let seq_len = rows[order[start]].ids.len().max(1);
            let take = (TOKENS_PER_FORWARD / seq_len)
                .max(1)
                .min(order.len() - start);
            let chunk = &order[start..start + take];
            let chunk_rows: Vec<&Tokenized> = chunk.iter().map(|&i| &rows[i]).collect();
            self.encode(&chunk_rows, seq_len)
                .and_then(|(hidden, mask)| each(chunk, hidden, mask))
                .map_err(|e| BackendError::Inference(e.to_string()))?;
            start += take;
        }
        Ok(())
    }

    /// Tokenises `batch` (texts, and token ids taken as they are); with `char_offsets`, rows
    /// also carry their tokens' code-point offsets and special-token mask, which only texts
    /// have.
    pub(crate) fn singles(
        &self,
        batch: &EmbedBatch,
        char_offsets: bool,
    ) -> Result<(Vec<Tokenized>, Vec<bool>), BackendError> {
        if batch.inputs.is_empty() {
            return Err(BackendError::EmptyBatch);
        }
        let mut cut = vec![false; batch.inputs.len()];
        let mut texts = Vec::new();
        for (index, input) in batch.inputs.iter().enumerate() {
            if let Input::Text(text) = input {
                let (kept, was_cut) = self.cap(text);
                cut[index] = was_cut;
                texts.push(kept);
            }
        }
        let mut texts = self.encode_texts(texts, char_offsets)?.into_iter();
        let encodings = batch
            .inputs
            .iter()
            .enumerate()
            .map(|(index, input)| match input {
                Input::Text(_) => texts.next().ok_or_else(|| {
                    BackendError::Tokenizer("the tokenizer returned too few encodings".into())
                }),
                Input::Ids(ids) => self.encode_ids(index, ids),
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.rows(encodings, &cut, batch.truncate, char_offsets)
    }

    /// Tokenises `batch` as (query, document) pairs, each side capped as a single text is.
    pub(crate) fn pairs(
        &self,
        batch: &PairBatch,
    ) -> Result<(Vec<Tokenized>, Vec<bool>), BackendError> {
        if batch.queries.len() != batch.documents.len() {
            return Err(BackendError::MismatchedPairs {
                queries: batch.queries.len(),
                documents: batch.documents.len(),
            });
        }
        if batch.queries.is_empty() {
            return Err(BackendError::EmptyBatch);
        }
        let mut cut = Vec::with_capacity(batch.queries.len());
        let pairs: Vec<(&str, &str)> = batch
            .queries
            .iter()
            .zip(&batch.documents)
            .map(|(query, document)| {
                let (query, query_cut) = self.cap(query);
                let (document, document_cut) = self.cap(document);
                cut.push(query_cut || document_cut);
                (query, document)
            })
            .collect();
        let encodings = self.encode_texts(pairs, false)?;
        self.rows(encodings, &cut, batch.truncate, false)
    }
}
