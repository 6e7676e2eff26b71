//! Reading one field's value, with the error a client sees when it has the wrong type.

use shoal_sidecar_core::Input;

use crate::error::{ErrorCode, ProtocolError};
use crate::msgpack::{Item, Reader};

pub(crate) fn too_many_inputs(field: &str, count: u64, max: usize) -> ProtocolError {
    ProtocolError::bad_request(format!(
        "`{field}` has {count} items, more than the limit of {max}"
    ))
}

/// Longest adapter name, bytes.
pub(crate) const MAX_ADAPTER_NAME_BYTES: usize = 128;

/// An adapter name: 1..=[`MAX_ADAPTER_NAME_BYTES`] bytes of printable ASCII.
pub(crate) fn adapter_name<'a>(field: &str, value: Item<'a>) -> Result<&'a str, ProtocolError> {
    let name = string(field, value)?;
    if name.is_empty()
        || name.len() > MAX_ADAPTER_NAME_BYTES
        || !name.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ProtocolError::bad_request(format!(
            "`{field}` must be 1..={MAX_ADAPTER_NAME_BYTES} printable ASCII characters"
        )));
    }
    Ok(name)
}

pub(crate) fn missing(field: &str) -> ProtocolError {
    ProtocolError::bad_request(format!("`{field}` is required"))
}

pub(crate) fn negative(field: &str) -> ProtocolError {
    ProtocolError::bad_request(format!("`{field}` must not be negative"))
}

pub(crate) fn count(field: &str, value: Item<'_>) -> Result<u64, ProtocolError> {
    match value {
        Item::Uint(v) => Ok(v),
        Item::Int(_) => Err(negative(field)),
        other => Err(wrong_type(field, "a non-negative integer", other)),
    }
}

pub(crate) fn number(field: &str, value: Item<'_>) -> Result<f64, ProtocolError> {
    match value {
        Item::Uint(v) => Ok(v as f64),
        Item::Float(v) if v < 0.0 => Err(negative(field)),
        Item::Float(v) => Ok(v),
        Item::Int(_) => Err(negative(field)),
        other => Err(wrong_type(field, "a non-negative number", other)),
    }
}

pub(crate) fn wrong_type(field: &str, expected: &str, got: Item<'_>) -> ProtocolError {
    ProtocolError::bad_request(format!(
        "`{field}` must be {expected}, got {}",
        got.type_name()
    ))
}

pub(crate) fn string<'a>(field: &str, value: Item<'a>) -> Result<&'a str, ProtocolError> {
    match value {
        Item::Str(bytes) => std::str::from_utf8(bytes)
            .map_err(|_| ProtocolError::bad_request(format!("`{field}` is not valid UTF-8"))),
        other => Err(wrong_type(field, "a string", other)),
    }
}

pub(crate) fn strings<'a>(
    r: &mut Reader<'a>,
    field: &str,
    value: Item<'a>,
    max: Option<usize>,
) -> Result<Vec<&'a str>, ProtocolError> {
    let Item::Array(len) = value else {
        return Err(wrong_type(field, "an array of strings", value));
    };
    // Refused from the header alone, before a single element is read.
    if let Some(max) = max
        && len as usize > max
    {
        return Err(too_many_inputs(field, u64::from(len), max));
    }
    // Capacity is bounded by the body: every element takes at least one byte.
    let mut out = Vec::new();
    for index in 0..len {
        let item = r
            .next()
            .map_err(|e| ProtocolError::new(ErrorCode::BadFrame, e.to_string()))?;
        match item {
            Item::Str(_) => out.push(string(field, item).map_err(|_| {
                ProtocolError::bad_request(format!("`{field}[{index}]` is not valid UTF-8"))
            })?),
            other => {
                return Err(ProtocolError::bad_request(format!(
                    "`{field}[{index}]` must be a string, got {}",
                    other.type_name()
                )));
            }
        }
    }
    Ok(out)
}

/// `embed`'s inputs: each a string, or an array of token ids (integers that fit in 32 bits).
pub(crate) fn inputs(
    r: &mut Reader<'_>,
    field: &str,
    value: Item<'_>,
    max: usize,
) -> Result<Vec<Input>, ProtocolError> {
    let Item::Array(len) = value else {
        return Err(wrong_type(
            field,
            "an array of strings or of token-id arrays",
            value,
        ));
    };
    if len as usize > max {
        return Err(too_many_inputs(field, u64::from(len), max));
    }
    let mut out = Vec::new();
    for index in 0..len {
        match next(r)? {
            item @ Item::Str(_) => out.push(Input::Text(
                string(field, item)
                    .map_err(|_| {
                        ProtocolError::bad_request(format!("`{field}[{index}]` is not valid UTF-8"))
                    })?
                    .to_owned(),
            )),
            Item::Array(0) => {
                return Err(ProtocolError::bad_request(format!(
                    "`{field}[{index}]` has no token ids"
                )));
            }
            Item::Array(ids) => {
                // Capacity is bounded by the body: every id takes at least one byte.
                let mut out_ids = Vec::new();
                for position in 0..ids {
                    match next(r)? {
                        Item::Uint(id) if id <= u64::from(u32::MAX) => out_ids.push(id as u32),
                        other => {
                            return Err(ProtocolError::bad_request(format!(
                                "`{field}[{index}][{position}]` must be a token id (an integer \
                                 from 0 to {}), got {}",
                                u32::MAX,
                                describe(other)
                            )));
                        }
                    }
                }
                out.push(Input::Ids(out_ids));
            }
            other => {
                return Err(ProtocolError::bad_request(format!(
                    "`{field}[{index}]` must be a string or an array of token ids, got {}",
                    other.type_name()
                )));
            }
        }
    }
    Ok(out)
}

fn next<'a>(r: &mut Reader<'a>) -> Result<Item<'a>, ProtocolError> {
    r.next()
        .map_err(|e| ProtocolError::new(ErrorCode::BadFrame, e.to_string()))
}

fn describe(item: Item<'_>) -> String {
    match item {
        Item::Uint(v) => v.to_string(),
        Item::Int(v) => v.to_string(),
        other => other.type_name().to_owned(),
    }
}
