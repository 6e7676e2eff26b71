//! Packed token layout: the real tokens of a padded batch, back to back.
//!
//! An encoder batch arrives right-padded to its longest row, `[batch, seq]`. Every
//! position-wise layer (the projections, the feed-forward network, LayerNorm) treats each token
//! alone, so it can run on the real tokens only, `[tokens, hidden]`, and spend nothing on
//! padding; only attention, which mixes the tokens of one row, needs the rows apart. A batch of
//! rows of mixed lengths pads by a third or more, and on a CPU the position-wise layers are
//! nearly all of the work, so packing saves that share of a batch's time. This is how
//! variable-length attention kernels lay batches out on GPUs too.

use candle_core::{DType, Device, Result, Tensor};

/// Where each real token of a right-padded `[batch, seq]` batch sits in both layouts.
pub(crate) struct Packing {
    seq_len: usize,
    lengths: Vec<usize>,
    tokens: usize,
    /// The padded slot (`row * seq + position`) of each real token, `[tokens]`; `None` when no
    /// row is padded and both layouts are the same.
    real_slots: Option<Tensor>,
    /// For each padded slot its packed row, or `tokens` (a zero row appended) for padding,
    /// `[batch * seq]`; `None` when no row is padded.
    packed_rows: Option<Tensor>,
    /// Each real token's position in its row, `[tokens]`.
    positions: Tensor,
}

impl Packing {
    /// The layout of rows of `lengths` tokens each, padded to `seq_len`.
    pub(crate) fn new(lengths: &[usize], seq_len: usize, device: &Device) -> Result<Self> {
        let batch = lengths.len();
        let tokens: usize = lengths.iter().sum();
        let mut positions = Vec::with_capacity(tokens);
        for &len in lengths {
            positions.extend(0..len as u32);
        }
        let positions = Tensor::from_vec(positions, tokens, device)?;
        if tokens == batch * seq_len {
            return Ok(Self {
                seq_len,
                lengths: lengths.to_vec(),
                tokens,
                real_slots: None,
                packed_rows: None,
                positions,
            });
        }
        let mut real_slots = Vec::with_capacity(tokens);
        let mut packed_rows = Vec::with_capacity(batch * seq_len);
        for (row, &len) in lengths.iter().enumerate() {
            let first = real_slots.len() as u32;
            real_slots.extend((0..len).map(|p| (row * seq_len + p) as u32));
            packed_rows.extend(first..first + len as u32);
            packed_rows.extend(std::iter::repeat_n(tokens as u32, seq_len - len));
        }
        Ok(Self {
            seq_len,
            lengths: lengths.to_vec(),
            tokens,
            real_slots: Some(Tensor::from_vec(real_slots, tokens, device)?),
            packed_rows: Some(Tensor::from_vec(packed_rows, batch * seq_len, device)?),
            positions,
        })
    }

    pub(crate) fn batch(&self) -> usize {
        self.lengths.len()
    }

    pub(crate) fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// Each real token's position in its row, `[tokens]` u32.
    pub(crate) fn positions(&self) -> &Tensor {
        &self.positions
    }

    /// `[batch * seq, ..]` in the padded layout → `[tokens, ..]`.
    pub(crate) fn pack(&self, padded: &Tensor) -> Result<Tensor> {
        match &self.real_slots {
            Some(slots) => padded.index_select(slots, 0),
            None => Ok(padded.clone()),
        }
    }

    /// `[tokens, width]` → `[batch * seq, width]`, zeros at padding.
    pub(crate) fn unpack(&self, packed: &Tensor) -> Result<Tensor> {
        let Some(rows) = &self.packed_rows else {
            return Ok(packed.clone());
        };
        let (tokens, width) = packed.dims2()?;
        debug_assert_eq!(tokens, self.tokens);
        let zero = Tensor::zeros((1, width), packed.dtype(), packed.device())?;
        Tensor::cat(&[packed, &zero], 0)?.index_select(rows, 0)
    }

    /// The additive attention mask `[batch, 1, 1, seq]` in `dtype`: 0 for real tokens, the most
    /// negative value of the compute type for padding (as Hugging Face does), so padding gets
    /// softmax weight 0. In f16 and bf16, f32::MIN would overflow to -inf.
    pub(crate) fn attention_mask(&self, dtype: DType) -> Result<Tensor> {
        let min = match dtype {
            DType::F16 | DType::BF16 => -65504f32,
            _ => f32::MIN,
        };
        let mut mask = Vec::with_capacity(self.lengths.len() * self.seq_len);
        for &len in &self.lengths {
            mask.extend(std::iter::repeat_n(0f32, len));
            mask.extend(std::iter::repeat_n(min, self.seq_len - len));
        }
        Tensor::from_vec(
            mask,
            (self.batch(), 1, 1, self.seq_len),
            self.positions.device(),
        )?
        .to_dtype(dtype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_real_tokens_and_unpacks_with_zeros_at_padding() {
        let device = Device::Cpu;
        let packing = Packing::new(&[2, 3, 1], 3, &device).unwrap();
        // Slot value = 10 * row + position, padding slots 99.
        let padded = Tensor::new(
            &[
                [0f32],
                [1.],
                [99.],
                [10.],
                [11.],
                [12.],
                [20.],
                [99.],
                [99.],
            ],
            &device,
        )
        .unwrap();
        let packed = packing.pack(&padded).unwrap();
        assert_eq!(
            packed.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            [0., 1., 10., 11., 12., 20.]
        );
        assert_eq!(
            packing.positions().to_vec1::<u32>().unwrap(),
            [0, 1, 0, 1, 2, 0]
        );
        let back = packing.unpack(&packed).unwrap();
        assert_eq!(
            back.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            [0., 1., 0., 10., 11., 12., 20., 0., 0.]
        );
    }

    #[test]
    fn an_unpadded_batch_is_left_as_it_is() {
        let device = Device::Cpu;
        let packing = Packing::new(&[2, 2], 2, &device).unwrap();
        let padded = Tensor::new(&[[1f32], [2.], [3.], [4.]], &device).unwrap();
        let packed = packing.pack(&padded).unwrap();
        assert_eq!(packing.unpack(&packed).unwrap().dims(), [4, 1]);
        assert_eq!(
            packed.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            [1., 2., 3., 4.]
        );
    }

    #[test]
    fn masks_padding_only() {
        let device = Device::Cpu;
        let packing = Packing::new(&[1, 2], 2, &device).unwrap();
        let mask = packing.attention_mask(DType::F32).unwrap();
        assert_eq!(
            mask.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            [0., f32::MIN, 0., 0.]
        );
    }
}
