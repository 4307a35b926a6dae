//! Alternate signal stacks: every thread that logs gets one (64 KiB at least,
//! with a guard page below it), unless it has one of its own, so the crash
//! handler runs even when the thread crashed by overflowing its stack.

use std::cell::Cell;
use std::ffi::c_void;

use crate::sys;

/// An alternate signal stack with a guard page below it, owned by one thread
/// and released when the thread exits.
struct AltStack {
    map: *mut c_void,
    map_len: usize,
}

impl Drop for AltStack {
    fn drop(&mut self) {
        // SAFETY: disable the stack only if it is still ours and not in use,
        // then unmap what `new_alt_stack` mapped.
        unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            libc::sigaltstack(std::ptr::null(), &mut current);
            let ours = current.ss_sp == self.map.cast::<u8>().add(page_size()).cast();
            if ours && current.ss_flags & libc::SS_ONSTACK == 0 {
                let disable = libc::stack_t {
                    ss_sp: std::ptr::null_mut(),
                    ss_flags: libc::SS_DISABLE,
                    ss_size: 0,
                };
                libc::sigaltstack(&disable, std::ptr::null_mut());
                libc::munmap(self.map, self.map_len);
            }
        }
    }
}

thread_local! {
    static ALT_STACK_CHECKED: Cell<bool> = const { Cell::new(false) };
    static ALT_STACK: Cell<Option<AltStack>> = const { Cell::new(None) };
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Gives the calling thread an alternate signal stack, once (the crash
/// handler is installed: see `crash::on_entry`), unless it has one of its
/// own.
#[inline]
pub fn ensure() {
    if !ALT_STACK_CHECKED.with(Cell::get) {
        ALT_STACK_CHECKED.with(|c| c.set(true));
        give_thread_alt_stack();
    }
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
    if let Some(stack) = new_alt_stack() {
        // A thread that first logs while it exits (from a pthread_key
        // destructor) may find the slot gone: the stack then goes too,
        // disabled and unmapped by its Drop.
        let _ = ALT_STACK.try_with(|slot| slot.set(Some(stack)));
    }
}

fn new_alt_stack() -> Option<AltStack> {
    let page = page_size();
    // SAFETY: getauxval only reads the auxiliary vector (0 when absent).
    let kernel_min = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as usize;
    let size = (64 * 1024).max(4 * kernel_min).max(libc::SIGSTKSZ);
    let size = size.div_ceil(page) * page;
    let map_len = size + page;
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
    Some(AltStack { map, map_len })
}
