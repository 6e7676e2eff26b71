//! The floating-point type an encoder computes in.

use candle_core::DType;

/// What an encoder's weights and activations are held in, whatever the checkpoint stores.
///
/// f32 is the default and what the golden tests hold to the reference outputs. f16 and bf16
/// halve the weights' memory and, on a GPU, run the matrix products on tensor cores, as
/// text-embeddings-inference does by default on CUDA. Pooling, normalisation and task heads
/// stay in f32 whichever is chosen: the encoder's last hidden states are widened before them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Precision {
    #[default]
    F32,
    F16,
    Bf16,
}

impl Precision {
    /// The protocol's names, as the load frame's `dtype` spells them.
    pub const NAMES: [&'static str; 3] = ["f32", "f16", "bf16"];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "f32" => Some(Self::F32),
            "f16" => Some(Self::F16),
            "bf16" => Some(Self::Bf16),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
        }
    }

    pub(crate) fn dtype(self) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::F16 => DType::F16,
            Self::Bf16 => DType::BF16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for name in Precision::NAMES {
            assert_eq!(Precision::from_name(name).unwrap().as_str(), name);
        }
        assert_eq!(Precision::from_name("fp16"), None);
        assert_eq!(Precision::from_name("F32"), None);
    }
}
