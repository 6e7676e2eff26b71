use candle_core::{D, IndexOp, Result, Tensor};

/// How per-token hidden states become one vector per input, as configured by
/// sentence-transformers' `1_Pooling/config.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Average of the hidden states of real (unpadded) tokens.
    Mean,
    /// Hidden state of the first token (`[CLS]`).
    Cls,
}

impl Pooling {
    /// Pools `hidden` (`[batch, seq, dim]`) under `mask` (`[batch, seq]`, 1.0 for real tokens,
    /// 0.0 for padding) into `[batch, dim]`.
    pub(crate) fn pool(self, hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
        match self {
            Pooling::Cls => hidden.i((.., 0))?.contiguous(),
            Pooling::Mean => {
                let mask = mask.unsqueeze(D::Minus1)?;
                let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
                // The clamp matches sentence-transformers and only matters for an all-padding
                // row, which cannot occur because every input carries its special tokens.
                let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
                summed.broadcast_div(&counts)
            }
        }
    }
}

/// Scales each row of `x` (`[batch, dim]`) to unit L2 norm, like `torch.nn.functional.normalize`
/// with its default `eps = 1e-12`.
pub(crate) fn l2_normalize(x: &Tensor) -> Result<Tensor> {
    let norms = x
        .sqr()?
        .sum_keepdim(D::Minus1)?
        .sqrt()?
        .clamp(1e-12f32, f32::MAX)?;
    x.broadcast_div(&norms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn mean_pooling_ignores_padding() {
        let hidden = Tensor::new(
            &[
                [[1f32, 2.], [3., 4.], [100., 100.]],
                [[5., 6.], [7., 8.], [9., 10.]],
            ],
            &Device::Cpu,
        )
        .unwrap();
        let mask = Tensor::new(&[[1f32, 1., 0.], [1., 1., 1.]], &Device::Cpu).unwrap();
        let pooled = Pooling::Mean.pool(&hidden, &mask).unwrap();
        assert_eq!(
            pooled.to_vec2::<f32>().unwrap(),
            vec![vec![2., 3.], vec![7., 8.]]
        );
        let cls = Pooling::Cls.pool(&hidden, &mask).unwrap();
        assert_eq!(
            cls.to_vec2::<f32>().unwrap(),
            vec![vec![1., 2.], vec![5., 6.]]
        );
    }

    #[test]
    fn normalize_gives_unit_rows() {
        let x = Tensor::new(&[[3f32, 4.], [0., 0.]], &Device::Cpu).unwrap();
        let n = l2_normalize(&x).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(n, vec![vec![0.6, 0.8], vec![0., 0.]]);
    }
}
