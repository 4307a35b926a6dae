//! Taking a backtrace at a call, for a record that keeps one
//! (`fields::frames`): the caller's return addresses, walked by the unwinder
//! every C and Rust program on Linux links (libgcc_s's `_Unwind_Backtrace`,
//! from the objects' `.eh_frame`, which GCC and Clang emit by default, so
//! no frame pointers are needed), and the loaded objects they fall in
//! (`dl_iterate_phdr`, their GNU build-id read from their notes in
//! memory). No allocation and no system call.
//!
//! Neither is done under the logger's lock: both take the loader's lock,
//! which a thread inside dlopen holds while a constructor registers its
//! call sites under the logger's.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

#[allow(non_camel_case_types)]
type _Unwind_Trace_Fn = extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> c_int;

extern "C" {
    // libgcc_s (the GCC unwinder Rust's own panics use).
    fn _Unwind_Backtrace(trace: _Unwind_Trace_Fn, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
    fn _Unwind_FindEnclosingFunction(pc: *mut c_void) -> *mut c_void;
}

/// `_URC_NO_REASON` and `_URC_END_OF_STACK`: go on, and stop.
const GO_ON: c_int = 0;
const STOP: c_int = 5;

struct Walk<'a> {
    /// The library's entry point the program called: the frames up to its
    /// own are vlog's, those after it the program's.
    entry: usize,
    found: bool,
    addresses: &'a mut [u64],
    n: usize,
}

extern "C" fn step(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` `frames_after` passed, alive for the
    // walk; `ctx` is the unwinder's context for this frame.
    let (walk, ip) = unsafe { (&mut *arg.cast::<Walk>(), _Unwind_GetIP(ctx)) };
    if ip == 0 {
        return GO_ON;
    }
    if !walk.found {
        // A return address is just past its call: the call is the byte
        // before, in the function that made it.
        // SAFETY: a lookup of the unwind tables only.
        let function = unsafe { _Unwind_FindEnclosingFunction((ip - 1) as *mut c_void) };
        walk.found = function as usize == walk.entry;
        return GO_ON;
    }
    walk.addresses[walk.n] = ip as u64;
    walk.n += 1;
    if walk.n == walk.addresses.len() {
        STOP
    } else {
        GO_ON
    }
}

/// The return addresses of the frames that called `entry` (a library
/// function the program calls, never inlined), the innermost first; how
/// many (none if `entry` is not on the stack).
pub fn frames_after(entry: usize, addresses: &mut [u64]) -> usize {
    if addresses.is_empty() {
        return 0;
    }
    let mut walk = Walk {
        entry,
        found: false,
        addresses,
        n: 0,
    };
    // SAFETY: `step` is called with `&mut walk` only during this call.
    unsafe { _Unwind_Backtrace(step, (&raw mut walk).cast()) };
    walk.n
}

/// The longest program path kept.
pub const PROGRAM_MAX: usize = 256;

/// The program's path, read once (`/proc/self/exe`, before a chroot that
/// would hide it): the loader names the program "".
static PROGRAM: [AtomicUsize; PROGRAM_MAX.div_ceil(8)] =
    [const { AtomicUsize::new(0) }; PROGRAM_MAX.div_ceil(8)];
static PROGRAM_LEN: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Reads the program's path, if not done yet: at start-up, before a
/// chroot. Allocates nothing.
pub fn learn_program() {
    if PROGRAM_LEN.load(Ordering::Acquire) != usize::MAX {
        return;
    }
    let mut buf = [0u8; PROGRAM_MAX + 1];
    // SAFETY: `buf` is writable for its length; the path is a C string.
    let n = unsafe {
        libc::readlink(
            c"/proc/self/exe".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let len = if n < 0 {
        0
    } else {
        (n as usize).min(PROGRAM_MAX)
    };
    for (word, chunk) in PROGRAM
        .iter()
        .zip(buf[..PROGRAM_MAX.div_ceil(8) * 8].chunks(8))
    {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        word.store(usize::from_ne_bytes(w), Ordering::Relaxed);
    }
    PROGRAM_LEN.store(len, Ordering::Release);
}

fn program(buf: &mut [u8; PROGRAM_MAX.div_ceil(8) * 8]) -> &[u8] {
    let len = PROGRAM_LEN.load(Ordering::Acquire);
    if len == usize::MAX {
        return b"";
    }
    for (chunk, word) in buf.chunks_mut(8).zip(&PROGRAM) {
        chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_ne_bytes());
    }
    &buf[..len]
}

/// A loaded object, as [`objects`] shows it.
pub struct Loaded<'a> {
    /// What its addresses were moved by when it was loaded.
    pub bias: u64,
    pub build_id: &'a [u8],
    /// Its path (the program's own, read at start-up, for the program).
    pub path: &'a [u8],
    phdrs: &'a [libc::Elf64_Phdr],
}

impl Loaded<'_> {
    /// Whether the call that returns to `address` is in this object.
    pub fn holds_call(&self, address: u64) -> bool {
        // A return address is just past its call: the call itself is the
        // byte before.
        let at = address.wrapping_sub(1).wrapping_sub(self.bias);
        self.phdrs
            .iter()
            .any(|p| p.p_type == libc::PT_LOAD && at >= p.p_vaddr && at - p.p_vaddr < p.p_memsz)
    }
}

/// Shows `visit` each loaded object, until it says false.
pub fn objects(visit: &mut dyn FnMut(&Loaded) -> bool) {
    extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, arg: *mut c_void) -> c_int {
        // SAFETY: `arg` is the visitor `objects` passed, alive for the
        // walk; `info` is the loader's, valid during this callback.
        let (visit, info) =
            unsafe { (&mut *arg.cast::<&mut dyn FnMut(&Loaded) -> bool>(), &*info) };
        let bias = info.dlpi_addr;
        let phdrs: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: the loader's program headers, `dlpi_phnum` of them.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
        };
        let mut path_buf = [0u8; PROGRAM_MAX.div_ceil(8) * 8];
        let path = if info.dlpi_name.is_null() {
            &b""[..]
        } else {
            // SAFETY: the loader's NUL-terminated name of the object.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        let path = if path.is_empty() {
            program(&mut path_buf)
        } else {
            path
        };
        let loaded = Loaded {
            bias,
            build_id: build_id(bias, phdrs),
            path,
            phdrs,
        };
        // Not 0 stops the walk.
        c_int::from(!visit(&loaded))
    }
    let mut visit = visit;
    // SAFETY: `each` is called with `&mut visit` only during this call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut visit).cast()) };
}

/// The GNU build-id among an object's notes, as they are in memory (a
/// loaded note segment is readable): every read within the segment.
fn build_id<'a>(bias: u64, phdrs: &'a [libc::Elf64_Phdr]) -> &'a [u8] {
    const NT_GNU_BUILD_ID: u32 = 3;
    for p in phdrs.iter().filter(|p| p.p_type == libc::PT_NOTE) {
        // SAFETY: a loaded object's note segment: `p_memsz` readable bytes
        // at its address, for as long as the object is loaded (a frame of
        // this call is in it).
        let notes: &'a [u8] = unsafe {
            std::slice::from_raw_parts(
                (bias.wrapping_add(p.p_vaddr)) as *const u8,
                p.p_memsz as usize,
            )
        };
        let mut rest = notes;
        while rest.len() >= 12 {
            let word = |i: usize| {
                u32::from_ne_bytes(rest[i * 4..i * 4 + 4].try_into().unwrap_or_default())
            };
            let (name_len, desc_len, kind) = (word(0) as usize, word(1) as usize, word(2));
            let name_end = 12 + name_len.div_ceil(4) * 4;
            let desc_end = name_end.saturating_add(desc_len.div_ceil(4) * 4);
            if desc_end > rest.len() {
                break;
            }
            if kind == NT_GNU_BUILD_ID && rest[12..12 + name_len] == *b"GNU\0" {
                return &rest[name_end..name_end + desc_len];
            }
            rest = &rest[desc_end..];
        }
    }
    b""
}
