use std::fmt;
use std::str::FromStr;

/// Which accelerator a sidecar owns, as written on the command line: `cpu`, `cuda` or `cuda:N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceSpec {
    /// Host CPU.
    #[default]
    Cpu,
    /// CUDA device by ordinal.
    Cuda(usize),
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Cpu => f.write_str("cpu"),
            DeviceSpec::Cuda(ordinal) => write!(f, "cuda:{ordinal}"),
        }
    }
}

/// A device string that is neither `cpu` nor `cuda[:N]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("device must be `cpu`, `cuda` or `cuda:N`, got `{0}`")]
pub struct ParseDeviceError(String);

impl FromStr for DeviceSpec {
    type Err = ParseDeviceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(DeviceSpec::Cpu),
            "cuda" => Ok(DeviceSpec::Cuda(0)),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(DeviceSpec::Cuda)
                .ok_or_else(|| ParseDeviceError(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for (text, spec, shown) in [
            ("cpu", DeviceSpec::Cpu, "cpu"),
            ("cuda", DeviceSpec::Cuda(0), "cuda:0"),
            ("cuda:3", DeviceSpec::Cuda(3), "cuda:3"),
        ] {
            let parsed: DeviceSpec = text.parse().unwrap();
            assert_eq!(parsed, spec);
            assert_eq!(parsed.to_string(), shown);
        }
        for bad in ["", "gpu", "cuda:", "cuda:x", "cuda:-1", "CPU"] {
            assert!(
                bad.parse::<DeviceSpec>().is_err(),
                "{bad:?} should not parse"
            );
        }
    }
}
