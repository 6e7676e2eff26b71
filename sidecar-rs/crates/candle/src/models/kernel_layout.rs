//! Quantized matrices held in the form Candle's fastest CPU kernels take.
//!
//! Candle has no SIMD kernel for Q4_1, Q5_0 or Q5_1 on the CPU: it multiplies them one scalar
//! at a time, so a batch of sequences costs as much per sequence as one alone. Each of their
//! blocks is `d · q (+ m)` with small integers `q`, so it is held here, exactly, as a Q8_0 block
//! of the same `d` and `q` (Q8_0 is `d · q` with `q` in ±127), and the block's minimum `m`, if
//! it has one, beside it: `w · x` is then the Q8_0 product plus, per block, `m` times the sum
//! of `x` over the block, a product 32 times smaller. No weight is rounded; only the kernel's
//! own quantization of the input differs from the scalar path's.
//!
//! On a CPU with 8-bit dot-product instructions (AVX-512 VNNI or AVX-VNNI), Candle multiplies
//! Q8_0 with tiled kernels, about eight times the rate of its per-row dot products on
//! SmolLM2's matrices here, but only when the inner dimension is a multiple of 256 and rows
//! come in sixteens. Small models miss that by a little (SmolLM2's hidden size is 576), so such
//! a Q8_0 matrix is held with zero blocks appended up to the next multiple of 256 and its
//! input padded with zeros to match: every dot product is unchanged, each costs a third more,
//! and all of them take the fast kernel.

use candle_core::quantized::ggml_file::qtensor_from_ggml;
use candle_core::quantized::k_quants::{BlockQ8K, GgmlType};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{D, Device, Module, Result, Tensor};
use half::f16;

/// The inner-dimension multiple Candle's tiled kernels need (one K-quant super-block).
const TILE_K: usize = 256;
/// The row multiple they need.
const TILE_N: usize = 16;
/// Values per block of every type held here.
const BLOCK: usize = 32;
/// Bytes of a Q8_0 block: an f16 scale and 32 signed bytes.
const Q8_0_BYTES: usize = 34;

/// A weight matrix `[n, k]` and how it is held (see the module).
#[derive(Debug, Clone)]
pub(crate) struct Matrix {
    weights: QMatMul,
    /// The inner dimension the model computes with.
    k: usize,
    /// Zero columns appended after it.
    padding: usize,
    /// Per row and block, the minimum its stored type added to every value, `[n, k / 32]`.
    minimums: Option<Tensor>,
    /// Multiplied by the tiled kernels, which quantize the input in blocks of 256 (see
    /// [`Matrix::forward`]).
    tiled: bool,
}

impl Matrix {
    /// Held as given.
    pub(crate) fn new(weights: QMatMul, k: usize) -> Self {
        Self {
            weights,
            k,
            padding: 0,
            minimums: None,
            tiled: false,
        }
    }

    /// `t` held for the device's fastest kernels: on the CPU, Q4_1, Q5_0 and Q5_1 as Q8_0
    /// plus minimums, and Q8_0 padded where the tiled kernels then apply; anything else, and
    /// everything on other devices, as stored.
    pub(crate) fn for_kernels(t: QTensor, device: &Device) -> Result<Self> {
        let (n, k) = t.shape().dims2()?;
        let dtype = t.dtype();
        let convertible = matches!(
            dtype,
            GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1 | GgmlDType::Q8_0
        );
        if !device.is_cpu() || !convertible {
            return Ok(Self::new(QMatMul::from_qtensor(t)?, k));
        }
        let tiled = cpu_has_int8_tiles() && n % TILE_N == 0;
        let held_k = if tiled { k.next_multiple_of(TILE_K) } else { k };
        if dtype == GgmlDType::Q8_0 && held_k == k {
            return Ok(Self {
                tiled,
                ..Self::new(QMatMul::from_qtensor(t)?, k)
            });
        }
        let raw = t.data()?;
        let (blocks, held_blocks, size) = (k / BLOCK, held_k / BLOCK, dtype.type_size());
        let mut q8 = vec![0u8; n * held_blocks * Q8_0_BYTES];
        let with_minimums = matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_1);
        let mut minimums = vec![0f32; if with_minimums { n * blocks } else { 0 }];
        for row in 0..n {
            for b in 0..blocks {
                let from = &raw[(row * blocks + b) * size..][..size];
                let to = &mut q8[(row * held_blocks + b) * Q8_0_BYTES..][..Q8_0_BYTES];
                let minimum = to_q8_0(dtype, from, to);
                if with_minimums {
                    minimums[row * blocks + b] = minimum;
                }
            }
        }
        Ok(Self {
            weights: QMatMul::from_qtensor(qtensor_from_ggml(
                GgmlDType::Q8_0,
                &q8,
                vec![n, held_k],
                device,
            )?)?,
            k,
            padding: held_k - k,
            tiled,
            minimums: with_minimums
                .then(|| Tensor::from_vec(minimums, (n, blocks), device))
                .transpose()?,
        })
    }

    /// Bytes the held weights take.
    pub(crate) fn bytes(&self) -> u64 {
        let weights = match &self.weights {
            QMatMul::QTensor(t) => t.storage_size_in_bytes(),
            QMatMul::Tensor(w) | QMatMul::TensorF16(w) => {
                w.elem_count() * w.dtype().size_in_bytes()
            }
        };
        let minimums = self.minimums.as_ref().map_or(0, |m| m.elem_count() * 4);
        (weights + minimums) as u64
    }

    /// `x · Wᵀ` for `x` of `[rows, k]`.
    ///
    /// The tiled kernels quantize their input to 8 bits per block of 256 values: where a
    /// block holds one of the large activations small models have in a few channels, the
    /// rest of it keeps a bit or two, and SmolLM2's next-token distribution moved six times
    /// further from the exact model's than llama.cpp's does. So the input goes in twice, as
    /// itself and as what that quantization loses (computed here exactly as the kernel
    /// quantizes), in one call of twice the rows: the two products add up to the product of
    /// the input with about 16 bits, for a second pass through weights already in cache.
    pub(crate) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = if self.padding == 0 {
            x.clone()
        } else {
            x.pad_with_zeros(D::Minus1, 0, self.padding)?
        };
        let y = if self.tiled {
            let rows = x.dim(0)?;
            let lost = (&x - quantized_as_tiles(&x)?)?;
            let both = self.weights.forward(&Tensor::cat(&[&x, &lost], 0)?)?;
            (both.narrow(0, 0, rows)? + both.narrow(0, rows, rows)?)?
        } else {
            self.weights.forward(&x)?
        };
        let Some(minimums) = &self.minimums else {
            return Ok(y);
        };
        let x = x.narrow(D::Minus1, 0, self.k)?;
        let (rows, k) = x.dims2()?;
        let sums = x.reshape((rows, k / BLOCK, BLOCK))?.sum(D::Minus1)?;
        y + sums.matmul(&minimums.t()?)?
    }

    /// The rows `ids` of the matrix (an embedding lookup), `[ids, k]`.
    pub(crate) fn embedding(&self, ids: &Tensor) -> Result<Tensor> {
        let mut rows = self.weights.embedding(ids)?;
        if self.padding > 0 {
            rows = rows.narrow(D::Minus1, 0, self.k)?.contiguous()?;
        }
        let Some(minimums) = &self.minimums else {
            return Ok(rows);
        };
        let (count, blocks) = (ids.elem_count(), self.k / BLOCK);
        let added = minimums
            .index_select(ids, 0)?
            .unsqueeze(2)?
            .broadcast_as((count, blocks, BLOCK))?
            .reshape((count, self.k))?;
        rows + added
    }
}

/// Writes the Q8_0 block holding the integers and scale of `from`, a block of `dtype`
/// (Q4_1, Q5_0, Q5_1 or Q8_0, in ggml's layout), into `to`; returns what is added to every
/// value of the block, 0 for the types without a minimum. The integers are centred on zero
/// (`q − 8` for 4 bits, `q − 16` for 5, the minimum raised by as many steps to match): the
/// kernel quantizes the input, and with all-positive integers its error would be summed
/// into every product instead of cancelling, while the separately added term is exact.
fn to_q8_0(dtype: GgmlDType, from: &[u8], to: &mut [u8]) -> f32 {
    let half_f32 = |bytes: &[u8]| f16::from_le_bytes([bytes[0], bytes[1]]).to_f32();
    let fifth_bits = |qh: &[u8], j: usize| {
        let qh = u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]]);
        (
            (((qh >> j) << 4) & 0x10) as u8,
            ((qh >> (j + 12)) & 0x10) as u8,
        )
    };
    to[..2].copy_from_slice(&from[..2]);
    let quants = &mut to[2..];
    match dtype {
        GgmlDType::Q4_1 => {
            for (j, &q) in from[4..20].iter().enumerate() {
                quants[j] = ((q & 0x0F) as i8 - 8) as u8;
                quants[j + BLOCK / 2] = ((q >> 4) as i8 - 8) as u8;
            }
            half_f32(&from[2..4]) + 8.0 * half_f32(&from[..2])
        }
        GgmlDType::Q5_0 => {
            for (j, &q) in from[6..22].iter().enumerate() {
                let (high0, high1) = fifth_bits(&from[2..6], j);
                quants[j] = (((q & 0x0F) | high0) as i8 - 16) as u8;
                quants[j + BLOCK / 2] = (((q >> 4) | high1) as i8 - 16) as u8;
            }
            0.0
        }
        GgmlDType::Q5_1 => {
            for (j, &q) in from[8..24].iter().enumerate() {
                let (high0, high1) = fifth_bits(&from[4..8], j);
                quants[j] = (((q & 0x0F) | high0) as i8 - 16) as u8;
                quants[j + BLOCK / 2] = (((q >> 4) | high1) as i8 - 16) as u8;
            }
            half_f32(&from[2..4]) + 16.0 * half_f32(&from[..2])
        }
        _ => {
            quants.copy_from_slice(&from[2..Q8_0_BYTES]);
            0.0
        }
    }
}

/// Matrices that multiply the same input (a layer's `q`, `k` and `v`, or `gate` and `up`),
/// stacked into one where they are stored alike: the input is then quantized once and the
/// kernels run once, instead of once per matrix.
#[derive(Debug, Clone)]
pub(crate) struct Stacked {
    /// Each held matrix with the row counts of the matrices stacked in it, in order.
    parts: Vec<(Matrix, Vec<usize>)>,
}

impl Stacked {
    pub(crate) fn new(parts: Vec<(Matrix, Vec<usize>)>) -> Self {
        Self { parts }
    }

    /// `x · Wᵀ` for each of the `N` stacked matrices, in order.
    pub(crate) fn forward<const N: usize>(&self, x: &Tensor) -> Result<[Tensor; N]> {
        let mut outputs = Vec::with_capacity(N);
        for (matrix, rows) in &self.parts {
            let y = matrix.forward(x)?;
            let mut offset = 0;
            for &n in rows {
                outputs.push(y.narrow(D::Minus1, offset, n)?.contiguous()?);
                offset += n;
            }
        }
        let count = outputs.len();
        outputs
            .try_into()
            .map_err(|_| candle_core::Error::Msg(format!("{count} matrices stacked, {N} expected")))
    }
}

/// `tensors` (each `[n_i, k]`) as one `[Σ n_i, k]` tensor of their common type, and the `n_i`;
/// `None` when their types or `k` differ.
pub(crate) fn stack_quantized(
    tensors: &[QTensor],
    device: &Device,
) -> Result<Option<(QTensor, Vec<usize>)>> {
    let Some(first) = tensors.first() else {
        return Ok(None);
    };
    let (dtype, k) = (first.dtype(), first.shape().dims2()?.1);
    let mut rows = Vec::with_capacity(tensors.len());
    let mut bytes = Vec::new();
    for t in tensors {
        let (n, tk) = t.shape().dims2()?;
        if t.dtype() != dtype || tk != k {
            return Ok(None);
        }
        rows.push(n);
        bytes.extend_from_slice(&t.data()?);
    }
    let joined = qtensor_from_ggml(dtype, &bytes, vec![rows.iter().sum(), k], device)?;
    Ok(Some((joined, rows)))
}

/// `x` (`[rows, k]`, `k` a multiple of 256) as the tiled kernels see it: each row quantized
/// to Q8_K (Candle's own quantizer, which those kernels call) and read back.
fn quantized_as_tiles(x: &Tensor) -> Result<Tensor> {
    let (rows, k) = x.dims2()?;
    let values = x.flatten_all()?.to_vec1::<f32>()?;
    let mut blocks = vec![BlockQ8K::zeros(); rows * k / TILE_K];
    BlockQ8K::from_float(&values, &mut blocks);
    let mut seen = vec![0f32; rows * k];
    BlockQ8K::to_float(&blocks, &mut seen);
    Tensor::from_vec(seen, (rows, k), x.device())
}

/// Whether Candle's tiled Q8_0 kernels run on this CPU: they need 8-bit dot-product
/// instructions, in 512-bit (AVX-512 VNNI) or 256-bit (AVX-VNNI) form.
fn cpu_has_int8_tiles() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"))
            || (is_x86_feature_detected!("avxvnni") && is_x86_feature_detected!("avx2"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix of `dtype` from seeded values, as a GGUF would hold it.
    fn stored(dtype: GgmlDType, n: usize, k: usize) -> (Tensor, QTensor) {
        let values: Vec<f32> = (0..n * k)
            .map(|i| ((i * 37 % 101) as f32 - 30.0) / 25.0)
            .collect();
        let w = Tensor::from_vec(values, (n, k), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, dtype).unwrap();
        (q.dequantize(&Device::Cpu).unwrap(), q)
    }

    #[test]
    fn every_held_type_keeps_the_stored_values_exactly() {
        let (n, k) = (32, 96);
        let ids = Tensor::new(&[0u32, 5, 31], &Device::Cpu).unwrap();
        for dtype in [
            GgmlDType::Q4_1,
            GgmlDType::Q5_0,
            GgmlDType::Q5_1,
            GgmlDType::Q8_0,
        ] {
            let (exact, q) = stored(dtype, n, k);
            let held = Matrix::for_kernels(q, &Device::Cpu).unwrap();
            // Where the CPU has the tiled kernels, 96 columns are held as 256.
            assert_eq!(
                held.padding,
                if cpu_has_int8_tiles() { TILE_K - k } else { 0 }
            );
            assert_eq!(
                held.minimums.is_some(),
                matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_1)
            );
            // An embedding lookup reads the held values back: the stored ones, to the bit.
            assert_eq!(
                held.embedding(&ids).unwrap().to_vec2::<f32>().unwrap(),
                exact
                    .index_select(&ids, 0)
                    .unwrap()
                    .to_vec2::<f32>()
                    .unwrap(),
                "{dtype:?}"
            );
            // A product differs from the exact one only by the kernel's 8-bit input.
            let x = Tensor::from_vec(
                (0..3 * k).map(|i| ((i % 7) as f32 - 3.0) / 3.0).collect(),
                (3, k),
                &Device::Cpu,
            )
            .unwrap();
            let want = x
                .matmul(&exact.t().unwrap())
                .unwrap()
                .to_vec2::<f32>()
                .unwrap();
            let got = held.forward(&x).unwrap().to_vec2::<f32>().unwrap();
            for (a, b) in want.iter().flatten().zip(got.iter().flatten()) {
                assert!(
                    (a - b).abs() <= 0.02 * a.abs().max(1.0),
                    "{dtype:?}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn other_types_and_other_shapes_are_held_as_stored() {
        let (_, q) = stored(GgmlDType::Q4_0, 32, 96);
        let held = Matrix::for_kernels(q, &Device::Cpu).unwrap();
        assert_eq!((held.padding, held.minimums.is_none()), (0, true));
        // 24 rows are not a multiple of the tiles' 16: no padding, but still Q8_0.
        let (_, q) = stored(GgmlDType::Q4_1, 24, 96);
        let held = Matrix::for_kernels(q, &Device::Cpu).unwrap();
        assert_eq!((held.padding, held.minimums.is_some()), (0, true));
    }
}
