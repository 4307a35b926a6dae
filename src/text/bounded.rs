//! The message buffer: keeps what fits of a message and cuts the rest with
//! a visible marker, ` [truncated: N bytes]`, so no message overflows and
//! none is cut silently.

use super::num::put_decimal;
use super::sink::Sink;

/// A message buffer of MESSAGE_MAX bytes that keeps what fits and counts the
/// rest, so that a message longer than that ends with the visible marker
/// ` [truncated: N bytes]` (N being its full length) and never overflows.
pub struct Bounded<'a> {
    buf: &'a mut [u8],
    len: usize,
    total: usize,
}

impl<'a> Bounded<'a> {
    pub fn new(buf: &'a mut [u8]) -> Bounded<'a> {
        Bounded {
            buf,
            len: 0,
            total: 0,
        }
    }

    /// Records that the message was `total` bytes long in all, more than was
    /// put (the caller had already cut it).
    pub fn claim(&mut self, total: usize) {
        self.total = self.total.max(total);
    }

    /// The message, cut with the marker if it did not fit.
    pub fn finish(self) -> &'a [u8] {
        const OPEN: &[u8] = b" [truncated: ";
        const CLOSE: &[u8] = b" bytes]";
        let cap = self.buf.len();
        if self.total <= cap && self.total == self.len {
            return &self.buf[..self.len];
        }
        let digits = self.total.checked_ilog10().unwrap_or(0) as usize + 1;
        let keep = self.len.min(cap - OPEN.len() - digits - CLOSE.len());
        let mut marker = Bounded::new(&mut self.buf[keep..]);
        marker.put(OPEN);
        put_decimal(self.total as u64, 1, &mut marker);
        marker.put(CLOSE);
        let end = keep + marker.len;
        &self.buf[..end]
    }
}

impl Sink for Bounded<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }

    /// What does not fit is only counted: a width of 2^31 costs no more
    /// than the buffer.
    fn put_repeat(&mut self, byte: u8, n: usize) {
        self.total = self.total.saturating_add(n);
        let k = n.min(self.buf.len() - self.len);
        self.buf[self.len..self.len + k].fill(byte);
        self.len += k;
    }
}
