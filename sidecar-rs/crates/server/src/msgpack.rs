//! A zero-copy MessagePack reader over one frame body.
//!
//! Requests are read field by field straight from the body instead of being decoded into a
//! generic value tree first: a generic tree turns a 64 MiB frame of one-byte elements into
//! gigabytes of nodes, while this reader allocates nothing for values it skips and lets the
//! request decoder refuse an oversized `inputs` array from its header alone.

use rmp::Marker;

/// The body ended early or holds a reserved marker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed MessagePack at byte {offset}: {reason}")]
pub(crate) struct Malformed {
    offset: usize,
    reason: &'static str,
}

/// One value header, with the payload of scalar and byte-string values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Item<'a> {
    Nil,
    Bool(bool),
    Uint(u64),
    /// A negative integer (non-negative ones always come back as [`Item::Uint`]).
    Int(i64),
    Float(f64),
    Str(&'a [u8]),
    Bin(&'a [u8]),
    Ext(&'a [u8]),
    /// An array header; its elements follow.
    Array(u32),
    /// A map header; its key/value pairs follow.
    Map(u32),
}

impl Item<'_> {
    /// A short type name for error messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Item::Nil => "nil",
            Item::Bool(_) => "bool",
            Item::Uint(_) | Item::Int(_) => "integer",
            Item::Float(_) => "float",
            Item::Str(_) => "string",
            Item::Bin(_) => "bin",
            Item::Ext(_) => "ext",
            Item::Array(_) => "array",
            Item::Map(_) => "map",
        }
    }
}

/// A cursor over a body.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Whether every byte has been consumed.
    pub(crate) fn is_at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    fn malformed(&self, reason: &'static str) -> Malformed {
        Malformed {
            offset: self.pos,
            reason,
        }
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| self.malformed("unexpected end of body"))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, Malformed> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn len_prefixed(&mut self, len: usize) -> Result<&'a [u8], Malformed> {
        self.bytes(len)
    }

    fn int(v: i64) -> Item<'a> {
        if v >= 0 {
            Item::Uint(v as u64)
        } else {
            Item::Int(v)
        }
    }

    /// Reads the next value header (and the payload of a scalar or byte string).
    pub(crate) fn next(&mut self) -> Result<Item<'a>, Malformed> {
        let marker = Marker::from_u8(self.u8()?);
        Ok(match marker {
            Marker::Null => Item::Nil,
            Marker::True => Item::Bool(true),
            Marker::False => Item::Bool(false),
            Marker::FixPos(v) => Item::Uint(u64::from(v)),
            Marker::FixNeg(v) => Item::Int(i64::from(v)),
            Marker::U8 => Item::Uint(u64::from(self.u8()?)),
            Marker::U16 => Item::Uint(u64::from(self.u16()?)),
            Marker::U32 => Item::Uint(u64::from(self.u32()?)),
            Marker::U64 => Item::Uint(self.u64()?),
            Marker::I8 => Self::int(i64::from(self.u8()? as i8)),
            Marker::I16 => Self::int(i64::from(self.u16()? as i16)),
            Marker::I32 => Self::int(i64::from(self.u32()? as i32)),
            Marker::I64 => Self::int(self.u64()? as i64),
            Marker::F32 => Item::Float(f64::from(f32::from_bits(self.u32()?))),
            Marker::F64 => Item::Float(f64::from_bits(self.u64()?)),
            Marker::FixStr(n) => Item::Str(self.len_prefixed(usize::from(n))?),
            Marker::Str8 => {
                let n = self.u8()?;
                Item::Str(self.len_prefixed(usize::from(n))?)
            }
            Marker::Str16 => {
                let n = self.u16()?;
                Item::Str(self.len_prefixed(usize::from(n))?)
            }
            Marker::Str32 => {
                let n = self.u32()?;
                Item::Str(self.len_prefixed(n as usize)?)
            }
            Marker::Bin8 => {
                let n = self.u8()?;
                Item::Bin(self.len_prefixed(usize::from(n))?)
            }
            Marker::Bin16 => {
                let n = self.u16()?;
                Item::Bin(self.len_prefixed(usize::from(n))?)
            }
            Marker::Bin32 => {
                let n = self.u32()?;
                Item::Bin(self.len_prefixed(n as usize)?)
            }
            Marker::FixArray(n) => Item::Array(u32::from(n)),
            Marker::Array16 => Item::Array(u32::from(self.u16()?)),
            Marker::Array32 => Item::Array(self.u32()?),
            Marker::FixMap(n) => Item::Map(u32::from(n)),
            Marker::Map16 => Item::Map(u32::from(self.u16()?)),
            Marker::Map32 => Item::Map(self.u32()?),
            // Extension payloads are skipped whole: a one-byte type, then the data.
            Marker::FixExt1 => Item::Ext(self.len_prefixed(2)?),
            Marker::FixExt2 => Item::Ext(self.len_prefixed(3)?),
            Marker::FixExt4 => Item::Ext(self.len_prefixed(5)?),
            Marker::FixExt8 => Item::Ext(self.len_prefixed(9)?),
            Marker::FixExt16 => Item::Ext(self.len_prefixed(17)?),
            Marker::Ext8 => {
                let n = self.u8()?;
                Item::Ext(self.len_prefixed(usize::from(n) + 1)?)
            }
            Marker::Ext16 => {
                let n = self.u16()?;
                Item::Ext(self.len_prefixed(usize::from(n) + 1)?)
            }
            Marker::Ext32 => {
                let n = self.u32()?;
                Item::Ext(self.len_prefixed(n as usize + 1)?)
            }
            Marker::Reserved => return Err(self.malformed("reserved marker 0xc1")),
        })
    }

    /// Skips the rest of a value whose header was `item`: nothing for scalars, every element
    /// for arrays and maps. Iterative, so nesting depth cannot overflow the stack; every
    /// element costs at least one byte, so a lying count ends at the end of the body.
    pub(crate) fn skip_children(&mut self, item: Item<'a>) -> Result<(), Malformed> {
        let mut pending: u64 = match item {
            Item::Array(n) => u64::from(n),
            Item::Map(n) => 2 * u64::from(n),
            _ => 0,
        };
        while pending > 0 {
            pending -= 1;
            match self.next()? {
                Item::Array(n) => pending += u64::from(n),
                Item::Map(n) => pending += 2 * u64::from(n),
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(value: rmpv::Value) -> Vec<u8> {
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &value).unwrap();
        out
    }

    #[test]
    fn reads_every_scalar_width() {
        use rmpv::Value as V;
        let cases = [
            (V::from(5u8), Item::Uint(5)),
            (V::from(300u16), Item::Uint(300)),
            (V::from(70_000u32), Item::Uint(70_000)),
            (V::from(u64::MAX), Item::Uint(u64::MAX)),
            (V::from(-3i8), Item::Int(-3)),
            (V::from(-300i16), Item::Int(-300)),
            (V::from(i64::MIN), Item::Int(i64::MIN)),
            (V::Boolean(true), Item::Bool(true)),
            (V::Nil, Item::Nil),
            (V::F64(1.5), Item::Float(1.5)),
            (V::F32(0.25), Item::Float(0.25)),
            (V::from("hé"), Item::Str("hé".as_bytes())),
            (V::Binary(vec![1, 2]), Item::Bin(&[1, 2])),
        ];
        for (value, expected) in cases {
            let bytes = encode(value.clone());
            let mut r = Reader::new(&bytes);
            assert_eq!(r.next().unwrap(), expected, "{value:?}");
            assert!(r.is_at_end());
        }
    }

    #[test]
    fn skips_nested_values_and_rejects_lies() {
        use rmpv::Value as V;
        let nested = V::Map(vec![(
            V::from("a"),
            V::Array(vec![V::from(1), V::Map(vec![]), V::Ext(3, vec![9; 20])]),
        )]);
        let mut bytes = encode(nested);
        bytes.push(0x07);
        let mut r = Reader::new(&bytes);
        let map = r.next().unwrap();
        r.skip_children(map).unwrap();
        assert_eq!(r.next().unwrap(), Item::Uint(7));

        // An array header claiming 2^32-1 elements with no data behind it.
        let lie = [0xdd, 0xff, 0xff, 0xff, 0xff];
        let mut r = Reader::new(&lie);
        let array = r.next().unwrap();
        assert_eq!(array, Item::Array(u32::MAX));
        assert!(r.skip_children(array).is_err());
        // A string longer than the body.
        assert!(Reader::new(&[0xdb, 0, 0, 1, 0, b'x']).next().is_err());
        assert!(Reader::new(&[0xc1]).next().is_err());
        assert!(Reader::new(&[]).next().is_err());
    }
}
