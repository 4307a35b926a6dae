//! Where rendered bytes go, without allocating: a growable buffer, or a
//! fixed stack buffer that flushes to a descriptor in chunks (for the crash
//! handler).

/// Where rendered bytes go.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);

    /// `n` copies of `byte` (padding).
    fn put_repeat(&mut self, byte: u8, mut n: usize) {
        let chunk = [byte; 32];
        while n > 0 {
            let k = n.min(chunk.len());
            self.put(&chunk[..k]);
            n -= k;
        }
    }
}

/// A sink that counts what it is given (the length of a value written
/// after its length).
#[derive(Default)]
pub struct Counter(pub usize);

impl Sink for Counter {
    fn put(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A fixed stack buffer that hands full chunks to `flush`: for writing to a file
/// descriptor from a signal handler, where nothing may allocate.
pub struct ChunkSink<F: FnMut(&[u8])> {
    buf: [u8; 4096],
    len: usize,
    flush: F,
}

impl<F: FnMut(&[u8])> ChunkSink<F> {
    pub fn new(flush: F) -> ChunkSink<F> {
        ChunkSink {
            buf: [0; 4096],
            len: 0,
            flush,
        }
    }

    pub fn finish(&mut self) {
        if self.len > 0 {
            (self.flush)(&self.buf[..self.len]);
            self.len = 0;
        }
    }
}

impl<F: FnMut(&[u8])> Sink for ChunkSink<F> {
    fn put(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.len == self.buf.len() {
                self.finish();
            }
            let n = bytes.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
            self.len += n;
            bytes = &bytes[n..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sink_splits_and_keeps_everything() {
        let mut got = Vec::new();
        let mut sink = ChunkSink::new(|b: &[u8]| got.extend_from_slice(b));
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        sink.put(&data[..5000]);
        sink.put(&data[5000..]);
        sink.finish();
        assert_eq!(got, data);
    }
}
