//! GGUF files (<https://github.com/ggml-org/ggml/blob/master/docs/gguf.md>): one file holding
//! quantized tensors and typed metadata (architecture, hyper-parameters, tokenizer, chat
//! template). Parsing is candle-core's, which bounds every length by the file size; this
//! wrapper checks the magic first so that a wrong file fails with a clear message, and reads
//! metadata leniently about integer widths, which vary between converters.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use candle_core::Device;
use candle_core::quantized::QTensor;
use candle_core::quantized::gguf_file::{Content, Value};

use crate::LoadError;

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: &[u8; 4] = b"GGUF";

/// An open GGUF file: its metadata read, its tensors read on demand.
pub(crate) struct Gguf {
    path: PathBuf,
    reader: BufReader<File>,
    content: Content,
}

impl Gguf {
    /// Opens `path` and reads its header and metadata.
    pub(crate) fn open(path: &Path) -> Result<Self, LoadError> {
        let io = |source| LoadError::Io {
            path: path.to_owned(),
            source,
        };
        let mut reader = BufReader::new(File::open(path).map_err(io)?);
        let mut magic = [0u8; 4];
        let read = reader.read(&mut magic).map_err(io)?;
        if read < 4 || &magic != GGUF_MAGIC {
            return Err(LoadError::Unsupported(format!(
                "{} is not a GGUF file (it does not start with the GGUF magic)",
                path.display()
            )));
        }
        reader.seek(SeekFrom::Start(0)).map_err(io)?;
        let content = Content::read(&mut reader).map_err(|e| {
            LoadError::Unsupported(format!("{} is not a valid GGUF file: {e}", path.display()))
        })?;
        Ok(Self {
            path: path.to_owned(),
            reader,
            content,
        })
    }

    /// The file this was read from.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn value(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    fn missing(&self, key: &str) -> LoadError {
        LoadError::Unsupported(format!(
            "{} has no metadata key `{key}`",
            self.path.display()
        ))
    }

    fn mistyped(&self, key: &str, expected: &str) -> LoadError {
        LoadError::Unsupported(format!(
            "{}: metadata `{key}` is not {expected}",
            self.path.display()
        ))
    }

    /// A string value, or `None` when absent.
    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&str>, LoadError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.mistyped(key, "a string")),
        }
    }

    /// A required string value.
    pub(crate) fn str(&self, key: &str) -> Result<&str, LoadError> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    /// A non-negative integer of any width, or `None` when absent.
    pub(crate) fn opt_usize(&self, key: &str) -> Result<Option<usize>, LoadError> {
        let Some(value) = self.value(key) else {
            return Ok(None);
        };
        as_u64(value)
            .and_then(|v| usize::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| self.mistyped(key, "a non-negative integer"))
    }

    /// A required non-negative integer.
    pub(crate) fn usize(&self, key: &str) -> Result<usize, LoadError> {
        self.opt_usize(key)?.ok_or_else(|| self.missing(key))
    }

    /// A float (or integer) value, or `None` when absent.
    pub(crate) fn opt_f64(&self, key: &str) -> Result<Option<f64>, LoadError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::F32(v)) => Ok(Some(f64::from(*v))),
            Some(Value::F64(v)) => Ok(Some(*v)),
            Some(other) => as_u64(other)
                .map(|v| Some(v as f64))
                .ok_or_else(|| self.mistyped(key, "a number")),
        }
    }

    /// A bool value, or `None` when absent.
    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, LoadError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Bool(v)) => Ok(Some(*v)),
            Some(_) => Err(self.mistyped(key, "a bool")),
        }
    }

    /// A required array of strings.
    pub(crate) fn strings(&self, key: &str) -> Result<Vec<&str>, LoadError> {
        match self.value(key) {
            None => Err(self.missing(key)),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.as_str()),
                    _ => Err(self.mistyped(key, "an array of strings")),
                })
                .collect(),
            Some(_) => Err(self.mistyped(key, "an array of strings")),
        }
    }

    /// An array of integers, or `None` when absent.
    pub(crate) fn opt_ints(&self, key: &str) -> Result<Option<Vec<i64>>, LoadError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| as_i64(v).ok_or_else(|| self.mistyped(key, "an array of integers")))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.mistyped(key, "an array of integers")),
        }
    }

    /// Whether the file holds a tensor called `name`.
    pub(crate) fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// Reads tensor `name` onto `device`, still quantized.
    pub(crate) fn tensor(&mut self, name: &str, device: &Device) -> Result<QTensor, LoadError> {
        if !self.has_tensor(name) {
            return Err(LoadError::Unsupported(format!(
                "{} has no tensor `{name}`",
                self.path.display()
            )));
        }
        self.content
            .tensor(&mut self.reader, name, device)
            .map_err(|e| {
                LoadError::Unsupported(format!(
                    "{}: tensor `{name}` cannot be read: {e}",
                    self.path.display()
                ))
            })
    }
}

fn as_u64(value: &Value) -> Option<u64> {
    match *value {
        Value::U8(v) => Some(u64::from(v)),
        Value::U16(v) => Some(u64::from(v)),
        Value::U32(v) => Some(u64::from(v)),
        Value::U64(v) => Some(v),
        Value::I8(v) => u64::try_from(v).ok(),
        Value::I16(v) => u64::try_from(v).ok(),
        Value::I32(v) => u64::try_from(v).ok(),
        Value::I64(v) => u64::try_from(v).ok(),
        _ => None,
    }
}

fn as_i64(value: &Value) -> Option<i64> {
    match *value {
        Value::I8(v) => Some(i64::from(v)),
        Value::I16(v) => Some(i64::from(v)),
        Value::I32(v) => Some(i64::from(v)),
        Value::I64(v) => Some(v),
        _ => as_u64(value).and_then(|v| i64::try_from(v).ok()),
    }
}
