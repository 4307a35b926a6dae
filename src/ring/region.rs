//! What every reader of a ring reads it through: a live ring in this
//! process (`view`), or bytes from a file, a dump or a core (`image`).

/// Where a reader finds a ring's data area and its head and tail.
pub trait Region {
    fn data_size(&self) -> u64;
    /// The oldest record's position; may grow while a live ring is read.
    fn head(&self) -> u64;
    fn tail(&self) -> u64;
    /// The published part of the call-site dictionary (see `sites`).
    fn dict(&self) -> &[u8];
    /// Copies `dst.len()` bytes from data offset `off`; both are multiples of 8
    /// and `off + dst.len() <= data_size()`.
    fn copy(&self, off: usize, dst: &mut [u8]);
    /// Whether a record copied whole (committed below the tail, not
    /// overwritten while copied) is the one its writer wrote: a ring in
    /// this process's private memory, whose one writer is this process
    /// ([W1], [W2]). Its checksum is then not computed again. False for
    /// everything read from outside, and for shared mappings.
    fn whole(&self) -> bool {
        false
    }
    /// Waits a little for the record at data offset `off`, whose commit
    /// word was 0, to be committed, and returns its commit word then: a
    /// live ring in this process, whose writers copy records after
    /// reserving them (see `ring::slot`). Regions read from outside have no
    /// writer to wait for: 0 at once.
    fn wait_committed(&self, _off: usize) -> u32 {
        0
    }
    /// The outputs' walk gives up on the record marked for them at data
    /// offset `off`, still in flight after [`Region::wait_committed`]: it
    /// is marked passed over (`record::PASSED_OVER`), so that its writer,
    /// as it commits, has it printed out of turn. Its commit word when it
    /// was committed after all (0 otherwise). Regions read from outside
    /// have no writer to tell: 0.
    fn pass_over(&self, _off: usize) -> u32 {
        0
    }
}

impl<R: Region + ?Sized> Region for &R {
    fn data_size(&self) -> u64 {
        (**self).data_size()
    }

    fn head(&self) -> u64 {
        (**self).head()
    }

    fn tail(&self) -> u64 {
        (**self).tail()
    }

    fn dict(&self) -> &[u8] {
        (**self).dict()
    }

    fn copy(&self, off: usize, dst: &mut [u8]) {
        (**self).copy(off, dst)
    }

    fn whole(&self) -> bool {
        (**self).whole()
    }

    fn wait_committed(&self, off: usize) -> u32 {
        (**self).wait_committed(off)
    }

    fn pass_over(&self, off: usize) -> u32 {
        (**self).pass_over(off)
    }
}
