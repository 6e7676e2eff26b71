use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Result, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::{Init, VarBuilder};

/// Memory-maps a safetensors file for a [`VarBuilder`] and counts the bytes of every tensor a
/// model actually takes from it. The count is what `memory_bytes` reports: unused tensors in the
/// file (a pooler, pre-training heads) are never copied to the device and so do not count.
pub(crate) struct CountedSafetensors {
    inner: MmapedSafetensors,
    loaded: Arc<AtomicU64>,
}

impl CountedSafetensors {
    /// Opens `path` and returns a builder in `dtype` on `device`, plus the running byte count.
    pub(crate) fn var_builder(
        path: &Path,
        dtype: DType,
        device: &Device,
    ) -> Result<(VarBuilder<'static>, Arc<AtomicU64>)> {
        // SAFETY: the mapping is only read while the builder lives, and the model directory is
        // owned by the model loader, which never rewrites a file it has handed to a sidecar.
        let inner = unsafe { MmapedSafetensors::new(path)? };
        let loaded = Arc::new(AtomicU64::new(0));
        let backend = Self {
            inner,
            loaded: Arc::clone(&loaded),
        };
        Ok((
            VarBuilder::from_backend(Box::new(backend), dtype, device.clone()),
            loaded,
        ))
    }

    fn count(&self, tensor: Tensor) -> Tensor {
        let bytes = tensor.elem_count() * tensor.dtype().size_in_bytes();
        self.loaded.fetch_add(bytes as u64, Ordering::Relaxed);
        tensor
    }
}

impl SimpleBackend for CountedSafetensors {
    fn get(&self, s: Shape, name: &str, h: Init, dtype: DType, dev: &Device) -> Result<Tensor> {
        SimpleBackend::get(&self.inner, s, name, h, dtype, dev).map(|t| self.count(t))
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> Result<Tensor> {
        SimpleBackend::get_unchecked(&self.inner, name, dtype, dev).map(|t| self.count(t))
    }

    fn contains_tensor(&self, name: &str) -> bool {
        SimpleBackend::contains_tensor(&self.inner, name)
    }
}
