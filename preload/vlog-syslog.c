/*
 * libvlog-syslog.so: vlog for a daemon that logs with syslog(3), without
 * changing it. Loaded with LD_PRELOAD, this library's openlog, closelog,
 * setlogmask, syslog, vsyslog, __syslog_chk and __vsyslog_chk come before
 * glibc's (Debian builds with _FORTIFY_SOURCE=2, so most programs call the
 * _chk forms). Each message becomes a vlog record: the source is the
 * ident, the facility and severity are fields, and the filters decide
 * before anything is formatted. By default every message is recorded in the
 * ring and sent on to /dev/log exactly as glibc would have sent it
 * (`1:syslog`); the VLOG_* variables change that as for any vlog program.
 * vlog-syslog(7) has the rules.
 *
 * Stable Rust cannot define a variadic function, so this part is C: the
 * check glibc makes first (setlogmask's mask), then vlog's (the source's
 * cached level), then vsnprintf, with errno as the caller left it for %m,
 * then one call into the core. In a setuid or setgid process (AT_SECURE)
 * vlog does not start, and every call goes to glibc's own function.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

/* vlog's functions and data are this library's own (the version script
 * exports none of them): hidden, they are reached directly, not through
 * the GOT and PLT, which the filter checked at every call would pay. */
#pragma GCC visibility push(hidden)
#include "vlog.h"

/* What the core keeps for this file (src/ffi/syslog.rs). */
extern int vlog__syslog_mask;
extern vlog_source *vlog__syslog_source;
extern const int vlog__syslog_priority[8];
#pragma GCC visibility pop

/* glibc's INTERNALLOG: how it logs a call with a bad priority. */
#define VLOG_SYSLOG_INTERNAL (LOG_ERR | LOG_CONS | LOG_PERROR | LOG_PID)
/* Messages up to this long are formatted on the stack (glibc's size too). */
#define VLOG_SYSLOG_STACK 1024

/* Not started, starting (on some thread), vlog's, glibc's (AT_SECURE). */
enum { NOT_STARTED, STARTING, RUNNING, PASSING };
static int state = NOT_STARTED;

/* glibc's functions, for the AT_SECURE case and for a call made while
 * vlog starts. */
static void (*glibc_openlog)(const char *, int, int);
static void (*glibc_closelog)(void);
static int (*glibc_setlogmask)(int);
static void (*glibc_vsyslog_chk)(int, int, const char *, va_list);
static int (*glibc_sigaction)(int, const struct sigaction *, struct sigaction *);
static sighandler_t (*glibc_signal)(int, sighandler_t);

/* Stored and read atomically: a call on another thread may look for them
 * while the constructor's start() is still finding them. */
#define VLOG_SYSLOG_FIND(slot, name) \
    __atomic_store_n(&(slot), (__typeof__(slot))dlsym(RTLD_NEXT, name), __ATOMIC_RELEASE)
#define VLOG_SYSLOG_GLIBC(slot) __atomic_load_n(&(slot), __ATOMIC_ACQUIRE)

static void find_glibc(void)
{
    VLOG_SYSLOG_FIND(glibc_sigaction, "sigaction");
    VLOG_SYSLOG_FIND(glibc_signal, "signal");
    VLOG_SYSLOG_FIND(glibc_openlog, "openlog");
    VLOG_SYSLOG_FIND(glibc_closelog, "closelog");
    VLOG_SYSLOG_FIND(glibc_setlogmask, "setlogmask");
    VLOG_SYSLOG_FIND(glibc_vsyslog_chk, "__vsyslog_chk");
}

/*
 * sigaction and signal: a daemon that installs its own handler for a
 * fatal signal after vlog started (or resets every signal to SIG_DFL)
 * would take the crash dump away. While vlog holds the signal, the
 * program's handler becomes the one vlog calls after the dump, and the
 * program sees what it would have seen without vlog.
 *
 * vlog's own calls to sigaction (the core's, linked into this library)
 * must reach glibc, not this function: the build links with
 * --wrap=sigaction, which sends them to __wrap_sigaction below.
 */
int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
static int start(void);

int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (VLOG_SYSLOG_GLIBC(glibc_sigaction) == NULL)
        VLOG_SYSLOG_FIND(glibc_sigaction, "sigaction");
    if (VLOG_SYSLOG_GLIBC(glibc_sigaction) == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return VLOG_SYSLOG_GLIBC(glibc_sigaction)(sig, act, old);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    /* Another library's constructor may get here before this one's. */
    if (start() == RUNNING && vlog__syslog_sigaction(sig, act, old))
        return 0;
    return __wrap_sigaction(sig, act, old);
}

/* signal() on a signal vlog holds, as glibc's makes it (BSD semantics:
 * the signal blocked in its handler, system calls restarted); any other
 * goes to glibc's own. */
sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction act, old;

    if (start() != RUNNING || handler == SIG_ERR || !vlog__syslog_sigaction(sig, NULL, &old)) {
        if (VLOG_SYSLOG_GLIBC(glibc_signal) == NULL)
            VLOG_SYSLOG_FIND(glibc_signal, "signal");
        if (VLOG_SYSLOG_GLIBC(glibc_signal) == NULL) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return VLOG_SYSLOG_GLIBC(glibc_signal)(sig, handler);
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;
    /* vlog holds the signal (it said so above, and only a fatal signal's
     * handler running now could have handed it back since). */
    if (!vlog__syslog_sigaction(sig, &act, &old))
        return VLOG_SYSLOG_GLIBC(glibc_signal) != NULL
                   ? VLOG_SYSLOG_GLIBC(glibc_signal)(sig, handler)
                   : SIG_ERR;
    return old.sa_handler;
}

/* Starts vlog once, from the constructor (or from the first call, if
 * another library's constructor logs before this one ran). Returns the
 * state: RUNNING, PASSING, or STARTING when another call is starting it. */
static int start(void)
{
    int seen = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    int errno_was;

    if (seen != NOT_STARTED)
        return seen;
    if (!__atomic_compare_exchange_n(&state, &seen, STARTING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return seen;
    errno_was = errno;
    find_glibc();
    seen = vlog__syslog_start() == 0 || VLOG_SYSLOG_GLIBC(glibc_vsyslog_chk) == NULL ? RUNNING
                                                                                  : PASSING;
    __atomic_store_n(&state, seen, __ATOMIC_RELEASE);
    errno = errno_was;
    return seen;
}

__attribute__((constructor)) static void vlog_syslog_load(void)
{
    start();
}

/* The call every form makes. `flag` is __syslog_chk's (-1 for the plain
 * forms), which only glibc's own formatting uses. */
static void vlog_syslog_emit(int pri, int flag, const char *fmt, va_list ap)
{
    char stack[VLOG_SYSLOG_STACK];
    const vlog_source *src;
    int run = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    int errno_was, level, n;
    size_t want;
    char *heap;
    va_list again;

    if (run != RUNNING && run != PASSING)
        run = start();
    if (run != RUNNING) {
        errno_was = errno;
        /* AT_SECURE, or vlog still starting on another thread (or below
         * this call, from a signal handler): glibc's own syslog. */
        if (VLOG_SYSLOG_GLIBC(glibc_vsyslog_chk) != NULL)
            VLOG_SYSLOG_GLIBC(glibc_vsyslog_chk)(pri, flag, fmt, ap);
        errno = errno_was;
        return;
    }
    /* glibc's order: bad bits reported and cleared, then the mask. */
    if (pri & ~(LOG_PRIMASK | LOG_FACMASK)) {
        syslog(VLOG_SYSLOG_INTERNAL, "syslog: unknown facility/priority: %x", pri);
        pri &= LOG_PRIMASK | LOG_FACMASK;
    }
    if ((LOG_MASK(LOG_PRI(pri)) & __atomic_load_n(&vlog__syslog_mask, __ATOMIC_RELAXED)) == 0)
        return;
    /* vlog's filter: the ident's source's cached level (0: not known yet,
     * the core decides). */
    src = __atomic_load_n(&vlog__syslog_source, __ATOMIC_ACQUIRE);
    if (src != NULL) {
        level = VLOG__LEVEL(src);
        if (level != 0 && vlog__syslog_priority[LOG_PRI(pri)] < level)
            return;
    }
    /* Nothing before this point changes errno. */
    errno_was = errno;
    if (fmt == NULL) {
        vlog__syslog_write(pri, "(null format)", 13, 13);
        errno = errno_was;
        return;
    }
    if (!vlog__format_is_safe(fmt)) {
        /* %n would write through an argument: log the format, not run it. */
        n = snprintf(stack, sizeof stack, "[format with %%n not run] %s", fmt);
        want = n < 0 ? 0 : (size_t)n < sizeof stack ? (size_t)n : sizeof stack - 1;
        vlog__syslog_write(pri, stack, want, want);
        errno = errno_was;
        return;
    }
    va_copy(again, ap);
    errno = errno_was; /* %m */
    n = vsnprintf(stack, sizeof stack, fmt, ap);
    if (n < 0) {
        n = snprintf(stack, sizeof stack, "[format error] %s", fmt);
        want = n < 0 ? 0 : (size_t)n < sizeof stack ? (size_t)n : sizeof stack - 1;
        vlog__syslog_write(pri, stack, want, want);
    } else if ((size_t)n < sizeof stack) {
        vlog__syslog_write(pri, stack, (size_t)n, (size_t)n);
    } else {
        want = (size_t)n < VLOG_MESSAGE_MAX ? (size_t)n : VLOG_MESSAGE_MAX;
        heap = (char *)malloc(want + 1);
        if (heap == NULL) {
            vlog__syslog_write(pri, stack, sizeof stack - 1, (size_t)n);
        } else {
            errno = errno_was;
            vsnprintf(heap, want + 1, fmt, again);
            vlog__syslog_write(pri, heap, want, (size_t)n);
            free(heap);
        }
    }
    va_end(again);
    errno = errno_was;
}

void openlog(const char *ident, int option, int facility)
{
    int errno_was = errno;

    if (start() == RUNNING)
        vlog__syslog_openlog(ident, option, facility);
    else if (VLOG_SYSLOG_GLIBC(glibc_openlog) != NULL)
        VLOG_SYSLOG_GLIBC(glibc_openlog)(ident, option, facility);
    errno = errno_was;
}

void closelog(void)
{
    int errno_was = errno;

    if (start() == RUNNING)
        vlog__syslog_closelog();
    else if (VLOG_SYSLOG_GLIBC(glibc_closelog) != NULL)
        VLOG_SYSLOG_GLIBC(glibc_closelog)();
    errno = errno_was;
}

int setlogmask(int mask)
{
    if (start() == RUNNING)
        return vlog__syslog_setlogmask(mask);
    return VLOG_SYSLOG_GLIBC(glibc_setlogmask) != NULL ? VLOG_SYSLOG_GLIBC(glibc_setlogmask)(mask)
                                                         : 0xff;
}

void syslog(int pri, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog_syslog_emit(pri, -1, fmt, ap);
    va_end(ap);
}

void vsyslog(int pri, const char *fmt, va_list ap)
{
    vlog_syslog_emit(pri, -1, fmt, ap);
}

void __syslog_chk(int pri, int flag, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog_syslog_emit(pri, flag, fmt, ap);
    va_end(ap);
}

void __vsyslog_chk(int pri, int flag, const char *fmt, va_list ap)
{
    vlog_syslog_emit(pri, flag, fmt, ap);
}
