//! Just enough msgpack for snapshots, with no value tree: a validator that leaves every value
//! where it lies in the input (so the big `bin` fields are read in place, never copied), and
//! the few encoders the writer needs.
//!
//! Validation refuses what Python's `msgpack.unpackb(data, raw=False, strict_map_key=True)`
//! refuses, so both kernels call the same inputs "not a memwire index snapshot": the reserved
//! marker 0xc1, truncation, trailing bytes, invalid UTF-8 in a `str`, a map key that is neither
//! `str` nor `bin`, containers nested more than 1024 deep, and a timestamp extension (type -1)
//! that Python's `Timestamp` rejects.

use rmpv::Value;

/// Python's msgpack keeps at most this many containers open at once.
const MAX_DEPTH: usize = 1024;

/// One validated msgpack value: the slice of the input holding its whole encoding.
#[derive(Clone, Copy)]
pub(super) struct Raw<'a>(&'a [u8]);

/// What a value's first bytes say it is; lengths are payload bytes or element counts.
enum Head {
    Scalar(usize),
    Str(usize),
    Bin(usize),
    Ext(i8, usize),
    Array(usize),
    Map(usize),
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    /// A big-endian unsigned length of `n` bytes.
    fn len(&mut self, n: usize) -> Option<usize> {
        let v = self.take(n)?.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
        usize::try_from(v).ok()
    }

    fn ext(&mut self, n: usize) -> Option<Head> {
        let len = self.len(n)?;
        Some(Head::Ext(self.byte()? as i8, len))
    }

    fn head(&mut self) -> Option<Head> {
        let m = self.byte()?;
        Some(match m {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => Head::Scalar(0),
            0x80..=0x8f => Head::Map(usize::from(m & 0x0f)),
            0x90..=0x9f => Head::Array(usize::from(m & 0x0f)),
            0xa0..=0xbf => Head::Str(usize::from(m & 0x1f)),
            0xc1 => return None,
            0xc4 => Head::Bin(self.len(1)?),
            0xc5 => Head::Bin(self.len(2)?),
            0xc6 => Head::Bin(self.len(4)?),
            0xc7 => self.ext(1)?,
            0xc8 => self.ext(2)?,
            0xc9 => self.ext(4)?,
            0xca | 0xce | 0xd2 => Head::Scalar(4),
            0xcb | 0xcf | 0xd3 => Head::Scalar(8),
            0xcc | 0xd0 => Head::Scalar(1),
            0xcd | 0xd1 => Head::Scalar(2),
            0xd4..=0xd8 => Head::Ext(self.byte()? as i8, 1 << (m - 0xd4)),
            0xd9 => Head::Str(self.len(1)?),
            0xda => Head::Str(self.len(2)?),
            0xdb => Head::Str(self.len(4)?),
            0xdc => Head::Array(self.len(2)?),
            0xdd => Head::Array(self.len(4)?),
            0xde => Head::Map(self.len(2)?),
            0xdf => Head::Map(self.len(4)?),
        })
    }

    /// Checks one value (inside `depth` open containers) and moves past it.
    fn skip(&mut self, depth: usize) -> Option<()> {
        match self.head()? {
            Head::Scalar(n) | Head::Bin(n) => {
                self.take(n)?;
            }
            Head::Str(n) => {
                std::str::from_utf8(self.take(n)?).ok()?;
            }
            Head::Ext(kind, n) => {
                let payload = self.take(n)?;
                if kind == -1 && !timestamp_ok(payload) {
                    return None;
                }
            }
            Head::Array(n) => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                for _ in 0..n {
                    self.skip(depth + 1)?;
                }
            }
            Head::Map(n) => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                for _ in 0..n {
                    // Keys must be str or bin (Python's strict_map_key).
                    let key = *self.data.get(self.pos)?;
                    if !matches!(key, 0xa0..=0xbf | 0xd9..=0xdb | 0xc4..=0xc6) {
                        return None;
                    }
                    self.skip(depth + 1)?;
                    self.skip(depth + 1)?;
                }
            }
        }
        Some(())
    }

    /// The next value, already validated by [`parse`].
    fn raw(&mut self) -> Option<Raw<'a>> {
        let start = self.pos;
        self.skip(0)?;
        Some(Raw(&self.data[start..self.pos]))
    }
}

/// Python's `Timestamp` takes 4, 8 or 12 bytes, with fewer than 10^9 nanoseconds.
fn timestamp_ok(p: &[u8]) -> bool {
    let nanos = match p.len() {
        4 => 0,
        8 => u64::from_be_bytes(p.try_into().unwrap_or_default()) >> 34,
        12 => u64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]])),
        _ => return false,
    };
    nanos < 1_000_000_000
}

/// The single value `data` holds, validated throughout; `None` for anything Python's unpackb
/// would refuse (trailing bytes included).
pub(super) fn parse(data: &[u8]) -> Option<Raw<'_>> {
    let mut c = Cursor { data, pos: 0 };
    c.skip(0)?;
    (c.pos == data.len()).then_some(Raw(data))
}

impl<'a> Raw<'a> {
    fn open(self) -> (Head, Cursor<'a>) {
        let mut c = Cursor { data: self.0, pos: 0 };
        let head = c.head().expect("validated");
        (head, c)
    }

    /// The `(key, value)` pairs of a map, in order.
    pub(super) fn map(self) -> Option<Vec<(Raw<'a>, Raw<'a>)>> {
        let (Head::Map(n), mut c) = self.open() else { return None };
        (0..n).map(|_| Some((c.raw()?, c.raw()?))).collect()
    }

    /// The elements of an array.
    pub(super) fn array(self) -> Option<Vec<Raw<'a>>> {
        let (Head::Array(n), mut c) = self.open() else { return None };
        (0..n).map(|_| c.raw()).collect()
    }

    pub(super) fn str(self) -> Option<&'a str> {
        let (Head::Str(n), mut c) = self.open() else { return None };
        std::str::from_utf8(c.take(n)?).ok()
    }

    /// The payload of a `bin`, in place.
    pub(super) fn bin(self) -> Option<&'a [u8]> {
        let (Head::Bin(n), mut c) = self.open() else { return None };
        c.take(n)
    }

    pub(super) fn is_nil(self) -> bool {
        self.0 == [0xc0]
    }

    /// The value decoded (for the small header fields, whose checks need it).
    pub(super) fn value(self) -> Value {
        let mut rd = self.0;
        rmpv::decode::read_value(&mut rd).unwrap_or(Value::Nil)
    }
}

// Encoding: the smallest form of each, as rmp and Python's msgpack (use_bin_type) write them.

fn header(out: &mut Vec<u8>, n: usize, small: Option<(u8, usize)>, markers: [u8; 3]) {
    match small {
        Some((base, limit)) if n < limit => out.push(base | n as u8),
        _ if markers[0] != 0 && n < 0x100 => out.extend([markers[0], n as u8]),
        _ if n < 0x1_0000 => {
            out.push(markers[1]);
            out.extend((n as u16).to_be_bytes());
        }
        _ => {
            out.push(markers[2]);
            out.extend((n as u32).to_be_bytes());
        }
    }
}

pub(super) fn write_str(out: &mut Vec<u8>, s: &str) {
    header(out, s.len(), Some((0xa0, 32)), [0xd9, 0xda, 0xdb]);
    out.extend_from_slice(s.as_bytes());
}

pub(super) fn write_bin_header(out: &mut Vec<u8>, n: usize) {
    header(out, n, None, [0xc4, 0xc5, 0xc6]);
}

#[cfg(test)]
fn write_bin(out: &mut Vec<u8>, b: &[u8]) {
    write_bin_header(out, b.len());
    out.extend_from_slice(b);
}

pub(super) fn write_array_header(out: &mut Vec<u8>, n: usize) {
    header(out, n, Some((0x90, 16)), [0, 0xdc, 0xdd]);
}

pub(super) fn write_map_header(out: &mut Vec<u8>, n: usize) {
    header(out, n, Some((0x80, 16)), [0, 0xde, 0xdf]);
}

pub(super) fn write_uint(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0x7f => out.push(n as u8),
        0x80..=0xff => out.extend([0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend((n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend((n as u32).to_be_bytes());
        }
        _ => {
            out.push(0xcf);
            out.extend(n.to_be_bytes());
        }
    }
}

pub(super) fn write_nil(out: &mut Vec<u8>) {
    out.push(0xc0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rmpv_bytes(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, v).unwrap();
        out
    }

    #[test]
    fn encoders_match_rmpv() {
        for n in [0usize, 1, 15, 16, 31, 32, 255, 256, 65535, 65536, 70000] {
            let s = "x".repeat(n);
            let mut out = Vec::new();
            write_str(&mut out, &s);
            assert_eq!(out, rmpv_bytes(&Value::from(s.as_str())), "str {n}");
            let b = vec![7u8; n];
            out.clear();
            write_bin(&mut out, &b);
            assert_eq!(out, rmpv_bytes(&Value::Binary(b)), "bin {n}");
            let a = vec![Value::Nil; n];
            out.clear();
            write_array_header(&mut out, n);
            out.extend(std::iter::repeat_n(0xc0, n));
            assert_eq!(out, rmpv_bytes(&Value::Array(a)), "array {n}");
        }
        for n in [0u64, 127, 128, 255, 256, 65535, 65536, u64::from(u32::MAX), 1 << 40] {
            let mut out = Vec::new();
            write_uint(&mut out, n);
            assert_eq!(out, rmpv_bytes(&Value::from(n)), "uint {n}");
        }
        let mut out = Vec::new();
        write_map_header(&mut out, 14);
        assert_eq!(out, [0x8e]);
    }

    #[test]
    fn validation_follows_python_msgpack() {
        let nested = |n: usize, leaf: &[u8]| {
            let mut v = vec![0x91; n];
            v.extend_from_slice(leaf);
            v
        };
        assert!(parse(&nested(1024, &[0x01])).is_some());
        assert!(parse(&nested(1025, &[0x01])).is_none());
        assert!(parse(&nested(1023, &[0x90])).is_some());
        assert!(parse(&nested(1024, &[0x90])).is_none());
        assert!(parse(&[0xc1]).is_none());
        assert!(parse(&[0x01, 0x01]).is_none());
        assert!(parse(&[0xa2, b'a']).is_none());
        assert!(parse(&[0xa1, 0xff]).is_none());
        assert!(parse(&[0x81, 0x01, 0x01]).is_none(), "int key");
        assert!(parse(&[0x81, 0xc4, 0x01, b'k', 0x01]).is_some(), "bin key");
        assert!(parse(&[0x91, 0x81, 0xc0, 0x01]).is_none(), "nested nil key");
        let ts = |payload: &[u8]| {
            let mut v = vec![0xc7, payload.len() as u8, 0xff];
            v.extend_from_slice(payload);
            parse(&v).is_some()
        };
        assert!(ts(&[0; 4]) && ts(&[0; 8]) && ts(&[0; 12]));
        assert!(!ts(&[0; 5]) && !ts(&[0; 0]));
        assert!(ts(&(999_999_999u64 << 34).to_be_bytes()));
        assert!(!ts(&(1_000_000_000u64 << 34).to_be_bytes()));
        assert!(!ts(&[0x3b, 0x9a, 0xca, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]));
        assert!(parse(&[0xd5, 0x05, 0, 0]).is_some(), "other extensions are kept");
    }
}
