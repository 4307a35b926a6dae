//! A mark callgrind understands, for `make bench-lock`: in a library built
//! with `--cfg vlog_lock_profile` (never the product), the flight
//! recorder's call toggles callgrind's collection as it takes the logger's
//! lock and as it lets go, so that a run with `--collect-atstart=no` counts
//! exactly the instructions executed while the lock is held. Outside
//! valgrind the mark is a few rotations that leave every register as it
//! was.

/// Callgrind's client request CALLGRIND_TOGGLE_COLLECT
/// (`VG_USERREQ_TOOL_BASE('C','T') + 2`, valgrind/callgrind.h).
const TOGGLE_COLLECT: u64 = 0x4354_0002;

/// The request's block: the request and five arguments. A static, so that
/// the mark costs the count only its address and the sequence below.
static ARGS: [u64; 6] = [TOGGLE_COLLECT, 0, 0, 0, 0, 0];

/// Toggles callgrind's collection (nothing outside valgrind).
#[inline(always)]
pub fn toggle_collect() {
    // SAFETY: valgrind's x86-64 client request sequence (valgrind.h,
    // VALGRIND_DO_CLIENT_REQUEST_EXPR): four rotations of rdi by 128 bits
    // in all leave it as it was, `xchg rbx, rbx` changes nothing; under
    // valgrind the request's result comes back in rdx (declared). The
    // block is only read, through rax.
    unsafe {
        core::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") ARGS.as_ptr(),
            inout("rdx") 0u64 => _,
            options(nostack),
        );
    }
}
