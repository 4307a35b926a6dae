//! Alternate signal stacks: every thread that logs gets one (64 KiB at least,
//! with a guard page below it), unless it has one of its own, so the crash
//! handler runs even when the thread crashed by overflowing its stack.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::OnceLock;

use crate::sys;

thread_local! {
    // Without destructors, so they are there at every moment of the
    // thread's life, its exit included.
    static ALT_STACK_CHECKED: Cell<bool> = const { Cell::new(false) };
    /// Calls left before the fault signals are unblocked again (0: at this
    /// call, as at a thread's first).
    static UNTIL_UNBLOCK: Cell<u32> = const { Cell::new(0) };
}

/// How often a thread's calls unblock the fault signals again, in case the
/// program blocked every signal after its first call (one rt_sigprocmask
/// per this many calls).
const UNBLOCK_EVERY: u32 = 1024;

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// The stack's size, and the mapping's (a guard page more).
fn sizes() -> (usize, usize) {
    let page = page_size();
    // SAFETY: getauxval only reads the auxiliary vector (0 when absent).
    let kernel_min = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as usize;
    let size = (64 * 1024).max(4 * kernel_min).max(libc::SIGSTKSZ);
    let size = size.div_ceil(page) * page;
    (size, size + page)
}

/// What a crash dump needs of the stack it runs on: the backtrace and the
/// record walk overflowed 24 KiB and fitted in 32 KiB; the rest is room for
/// a larger signal frame (the CPU's register state).
pub const DUMP_NEEDS: usize = 40 * 1024;

/// The size of the alternate stack this signal handler runs on, when it is
/// too small for a dump: one the program set up itself (Rust's std gives
/// each thread a few KiB), which vlog never replaces. Async-signal-safe.
pub fn too_small_for_a_dump() -> Option<usize> {
    // SAFETY: sigaltstack only writes the current stack into `current`.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: querying only.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
    (current.ss_flags & libc::SS_ONSTACK != 0 && current.ss_size < DUMP_NEEDS)
        .then_some(current.ss_size)
}

/// The pthread key whose destructor frees a thread's stack when it exits.
/// A key, not a Rust thread-local with a destructor: a thread that first
/// logs from a pthread_key destructor (after the thread-local destructors
/// ran) would register one that never runs, and leak the stack; key
/// destructors run again while a key has a value.
fn key() -> Option<libc::pthread_key_t> {
    static KEY: OnceLock<Option<libc::pthread_key_t>> = OnceLock::new();
    *KEY.get_or_init(|| {
        let mut key = 0;
        // SAFETY: `release` is a plain function that lives as long as the
        // program.
        (unsafe { libc::pthread_key_create(&mut key, Some(release)) } == 0).then_some(key)
    })
}

/// Gives the calling thread an alternate signal stack, once (the crash
/// handler is installed: see `crash::on_entry`), unless it has one of its
/// own.
/// With it, the fault signals unblocked at the thread's first call and
/// every `UNBLOCK_EVERY` calls (see `signals::unblock_faults`).
#[inline]
pub fn ensure() {
    let left = UNTIL_UNBLOCK.with(Cell::get);
    if left == 0 {
        first_or_every();
    } else {
        UNTIL_UNBLOCK.with(|c| c.set(left - 1));
    }
}

/// For a thread about to write its own line: when it is an error (a
/// crash's last words, maybe), the fault signals unblocked again if this
/// thread's calls have met the handler installed, in case the program
/// blocked every signal since.
#[inline]
pub fn before_writing(error: bool) {
    if error && ALT_STACK_CHECKED.with(Cell::get) {
        super::signals::unblock_faults();
    }
}

#[cold]
fn first_or_every() {
    UNTIL_UNBLOCK.with(|c| c.set(UNBLOCK_EVERY - 1));
    // The calls that log keep errno as their caller left it.
    crate::sys::keeping_errno(|| {
        if !ALT_STACK_CHECKED.with(Cell::get) {
            ALT_STACK_CHECKED.with(|c| c.set(true));
            give_thread_alt_stack();
        }
        super::signals::unblock_faults();
    });
}

/// The first logging call of a thread with the handler installed.
#[cold]
fn give_thread_alt_stack() {
    // SAFETY: sigaltstack only reads our out-pointer's size.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: querying only.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
    if current.ss_flags & libc::SS_DISABLE == 0 {
        return; // someone else's stack: never replace it
    }
    let Some(key) = key() else { return };
    if let Some(map) = new_alt_stack() {
        // SAFETY: the key was made by `key`; the value is the mapping its
        // destructor frees.
        if unsafe { libc::pthread_setspecific(key, map) } != 0 {
            release(map);
        }
    }
}

/// The key's destructor, at the thread's exit: the stack is disabled if it
/// is still ours and not in use, and unmapped. A later call of the thread
/// (from another key's destructor) gives it a new one.
extern "C" fn release(map: *mut c_void) {
    let (size, map_len) = sizes();
    // SAFETY: disable the stack only if it is still ours and not in use,
    // then unmap what `new_alt_stack` mapped.
    unsafe {
        let mut current: libc::stack_t = std::mem::zeroed();
        libc::sigaltstack(std::ptr::null(), &mut current);
        let ours = current.ss_sp == map.cast::<u8>().add(map_len - size).cast();
        if ours && current.ss_flags & libc::SS_ONSTACK == 0 {
            let disable = libc::stack_t {
                ss_sp: std::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            };
            libc::sigaltstack(&disable, std::ptr::null_mut());
            libc::munmap(map, map_len);
        }
    }
    ALT_STACK_CHECKED.with(|c| c.set(false));
    UNTIL_UNBLOCK.with(|c| c.set(0));
}

/// A new stack with a guard page below it, registered for this thread: the
/// mapping.
fn new_alt_stack() -> Option<*mut c_void> {
    let page = page_size();
    let (size, map_len) = sizes();
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK;
    // SAFETY: a fresh anonymous mapping aliases nothing.
    let map = unsafe { sys::map_rw(map_len, flags, -1) }
        .ok()?
        .as_ptr()
        .cast::<c_void>();
    // SAFETY: the lowest page of our own mapping becomes the guard; the stack
    // above it is registered for this thread.
    unsafe {
        libc::mprotect(map, page, libc::PROT_NONE);
        let stack = libc::stack_t {
            ss_sp: map.cast::<u8>().add(page).cast(),
            ss_flags: 0,
            ss_size: size,
        };
        if libc::sigaltstack(&stack, std::ptr::null_mut()) != 0 {
            libc::munmap(map, map_len);
            return None;
        }
    }
    Some(map)
}
