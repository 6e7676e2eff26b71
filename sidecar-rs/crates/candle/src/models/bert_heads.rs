//! The task heads Hugging Face puts on a BERT encoder (Devlin et al. 2018, §4, "Experiments":
//! sentence-level tasks classify the final `[CLS]` state, token-level tasks classify every
//! token's final state).
//!
//! Names follow `BertForSequenceClassification` and `BertForTokenClassification` in
//! <https://github.com/huggingface/transformers/blob/main/src/transformers/models/bert/modeling_bert.py>:
//! `bert.pooler.dense` and `classifier` are the checkpoint's tensor paths. Dropout is the
//! identity at inference.

use candle_core::{IndexOp, Result, Tensor};
use candle_nn::{Linear, Module, VarBuilder, linear};

/// `BertPooler`: `tanh(W · h_[CLS] + b)`, the sentence vector the pre-training's next-sentence
/// objective shaped and the one sequence classification fine-tunes.
struct BertPooler {
    dense: Linear,
}

impl BertPooler {
    fn load(vb: VarBuilder, hidden_size: usize) -> Result<Self> {
        Ok(Self {
            dense: linear(hidden_size, hidden_size, vb.pp("dense"))?,
        })
    }

    /// `hidden` is `[batch, seq, hidden]`; returns `[batch, hidden]`.
    fn forward(&self, hidden: &Tensor) -> Result<Tensor> {
        self.dense
            .forward(&hidden.i((.., 0))?.contiguous()?)?
            .tanh()
    }
}

/// `BertForSequenceClassification` without its encoder: pooler, then one linear layer to the
/// labels. With one label this is a cross-encoder's relevance logit.
pub struct SequenceClassifier {
    pooler: BertPooler,
    classifier: Linear,
}

impl SequenceClassifier {
    /// Loads the head from the checkpoint root (`bert.pooler.*`, or `pooler.*` in a checkpoint
    /// saved without the `bert.` prefix, and `classifier.*`). A `classifier.weight` whose shape
    /// is not `[labels, hidden_size]` is an error.
    pub fn load(vb: VarBuilder, hidden_size: usize, labels: usize) -> Result<Self> {
        let pooler = if vb.contains_tensor("bert.pooler.dense.weight") {
            vb.pp("bert.pooler")
        } else {
            vb.pp("pooler")
        };
        Ok(Self {
            pooler: BertPooler::load(pooler, hidden_size)?,
            classifier: linear(hidden_size, labels, vb.pp("classifier"))?,
        })
    }

    /// `hidden` is the encoder's `[batch, seq, hidden]`; returns logits `[batch, labels]`.
    pub fn forward(&self, hidden: &Tensor) -> Result<Tensor> {
        self.classifier.forward(&self.pooler.forward(hidden)?)
    }
}

/// `BertForTokenClassification` without its encoder: one linear layer from every token's
/// state to the labels.
pub struct TokenClassifier {
    classifier: Linear,
}

impl TokenClassifier {
    /// Loads `classifier.*` from the checkpoint root; its weight must be `[labels, hidden_size]`.
    pub fn load(vb: VarBuilder, hidden_size: usize, labels: usize) -> Result<Self> {
        Ok(Self {
            classifier: linear(hidden_size, labels, vb.pp("classifier"))?,
        })
    }

    /// `hidden` is `[batch, seq, hidden]`; returns logits `[batch, seq, labels]`.
    pub fn forward(&self, hidden: &Tensor) -> Result<Tensor> {
        self.classifier.forward(hidden)
    }
}
