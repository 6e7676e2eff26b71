use std::path::Path;

use candle_core::Device;
use shoal_sidecar_core::DeviceSpec;

use crate::{CandleBackend, LoadError};

/// The device every model of one sidecar runs on. Created once at start so that a missing GPU
/// fails the process before it reports ready, and so that all models share one CUDA context.
#[derive(Debug, Clone)]
pub struct CandleRuntime {
    spec: DeviceSpec,
    device: Device,
}

impl CandleRuntime {
    /// Opens `spec`. CUDA devices need the crate's `cuda` feature and a visible GPU.
    pub fn open(spec: DeviceSpec) -> Result<Self, LoadError> {
        let device = match spec {
            DeviceSpec::Cpu => Device::Cpu,
            DeviceSpec::Cuda(ordinal) => {
                if !cfg!(feature = "cuda") {
                    return Err(LoadError::Device {
                        device: spec.to_string(),
                        reason: "this sidecar was built without the `cuda` feature".into(),
                    });
                }
                Device::new_cuda(ordinal).map_err(|e| LoadError::Device {
                    device: spec.to_string(),
                    reason: e.to_string(),
                })?
            }
        };
        Ok(Self { spec, device })
    }

    /// The protocol's `backend` name: `candle-cpu` or `candle-cuda`.
    pub fn backend_name(&self) -> &'static str {
        match self.spec {
            DeviceSpec::Cpu => "candle-cpu",
            DeviceSpec::Cuda(_) => "candle-cuda",
        }
    }

    /// The device this runtime was opened on.
    pub fn device_spec(&self) -> DeviceSpec {
        self.spec
    }

    /// Loads the model directory `dir` onto this runtime's device.
    pub fn load(&self, dir: &Path) -> Result<CandleBackend, LoadError> {
        CandleBackend::load(dir, &self.device)
    }
}
