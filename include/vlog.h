/*
 * vlog.h: logging for C daemons.
 *
 *   #include <vlog.h>
 *   VLOG_INIT("qemu.monitor");          (once per C file: names its source)
 *
 *   VLOG_DEBUG("sent %zu bytes to fd %d", n, fd);
 *   VLOG_INFO(...), VLOG_WARN(...), VLOG_ERROR(...), VLOG(prio, ...)
 *
 * A disabled macro call costs one load and one compare in the caller: no
 * function call, and its arguments are not evaluated. The format string must
 * be a literal checked by the compiler: log outside text as
 * VLOG_INFO("%s", text), never VLOG_INFO(text).
 *
 * Configuration comes from the environment (VLOG_LEVEL, VLOG_FILTERS,
 * VLOG_OUTPUTS, VLOG_BUFFER_SIZE, VLOG_BUFFER_FILE, VLOG_DUMP,
 * VLOG_DUMP_SIGNAL; see vlog(7)) and from the vlog_set_* functions. The
 * library's functions are declared in vlog_gen.h (generated from the Rust
 * sources), which this header includes.
 *
 * Beside a header that defines the same names (Open vSwitch's
 * <openvswitch/vlog.h>; glog's and Abseil's VLOG in C++), define
 * VLOG_NO_SHORT_NAMES before including this one: it then leaves out VLOG,
 * VLOG_DEBUG to VLOG_ERROR with their _ONCE, _EVERY_N and _RATELIMITED
 * forms, vlog() and the declaration of vlog_init(), and the program logs
 * with VLOG_AT(prio, ...), VLOG_AT_ONCE, VLOG_AT_EVERY_N and
 * VLOG_AT_RATELIMITED, which are always there (vlog(3), NAMESAKES).
 *
 * This file: the version, the macros and the inline functions of the API
 * first; then, under "Internal", the machinery they expand to, which is not
 * API (names starting with vlog__ or VLOG__ are vlog's own).
 */
#ifndef VLOG_H
#define VLOG_H

/* The macros need variadic macros, inline functions and va_copy (C99), and
 * in C++ what C++11 brought (vlog(3), STANDARDS). */
#if defined(__cplusplus)
#if __cplusplus < 201103L
#error "vlog.h needs C++11 or later (-std=c++11 or newer)"
#endif
#elif !defined(__STDC_VERSION__) || __STDC_VERSION__ < 199901L
#error "vlog.h needs C99 or later (-std=c99, -std=gnu99 or newer)"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open vSwitch declares a vlog_init() of its own, of another type: under
 * VLOG_NO_SHORT_NAMES vlog's is declared under a name nothing calls (vlog
 * starts by itself at its first call). */
#ifdef VLOG_NO_SHORT_NAMES
#define vlog_init vlog__init_left_out
#endif
#include "vlog_gen.h"
#ifdef VLOG_NO_SHORT_NAMES
#undef vlog_init
#endif

#if defined(__cplusplus) && __cplusplus >= 201103L
#include <type_traits> /* the format check's const-array test */
#endif

#if !defined(__GNUC__) && !defined(__clang__)
#error "vlog.h needs GCC or Clang (atomic builtins, format and constructor attributes)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ------------------------------------------------------------ */

/* VLOG_VERSION_MAJOR, _MINOR and _PATCH (vlog_gen.h) are this header's;
 * vlog_version() gives the library's. */
#define VLOG__STR2(x) #x
#define VLOG__STR(x) VLOG__STR2(x)
#define VLOG_VERSION                                                          \
    VLOG__STR(VLOG_VERSION_MAJOR) "." VLOG__STR(VLOG_VERSION_MINOR) "."      \
        VLOG__STR(VLOG_VERSION_PATCH)

/* ---- Sources ------------------------------------------------------------ */

/* The source named "default": calls that pass a NULL source use it. The
 * library keeps its level, so it is not const. */
extern vlog_source vlog_default_source;

/* A static initialiser for a vlog_source; `name` must be a string literal. */
#define VLOG_SOURCE_INITIALIZER(name) { 0, "" name "", sizeof("" name "") - 1 }

/*
 * Declares this file's source, used by every VLOG_* macro in the file. A
 * constructor checks, when the object is loaded, that the library has the
 * layout this header compiled in (vlog_abi_check: a mismatch is reported
 * once and the object's sites stay off, never silent corruption), and hands
 * the library the object's call sites (the `vlog_sites` section), so that
 * each is known, listed and configured before its first call; a destructor
 * takes them back when the object is unloaded (dlclose), so the library
 * never touches a site or a source that is gone.
 */
#define VLOG_INIT(name)                                                       \
    static vlog_source vlog__source = VLOG_SOURCE_INITIALIZER(name);          \
    __attribute__((constructor)) static void vlog__source_init(void)          \
    {                                                                         \
        if (vlog_abi_check(VLOG_ABI_VERSION, sizeof(vlog_source),             \
                           sizeof(vlog__site)) != 0)                          \
            vlog__off(&vlog__source, __start_vlog_sites, __stop_vlog_sites);  \
        else                                                                  \
            vlog__sites_register((const vlog__site *const *)__start_vlog_sites, \
                                 (const vlog__site *const *)__stop_vlog_sites); \
    }                                                                         \
    __attribute__((destructor)) static void vlog__source_fini(void)           \
    {                                                                         \
        vlog__sites_unregister((const vlog__site *const *)__start_vlog_sites); \
        vlog__source_unregister(&vlog__source);                               \
    }                                                                         \
    struct vlog__init_takes_the_semicolon

/* True (1) when a message of priority `prio` from `src` (NULL: the default
 * source) is recorded, for guarding preparation that costs: the one load and
 * compare every macro does inline, and, for a source vlog does not know yet
 * (before its first call), one call that registers it and answers. It tests
 * the source's level; a call site switched on by itself (`1:func=NAME`,
 * `1:file=NAME`, `1:id=ID`) is not its source. */
#define VLOG_ENABLED(src, prio) vlog__enabled((src), (prio))

/* VLOG_ENABLED for this file's source (VLOG_INIT):
 *     if (VLOG_ON(VLOG_PRIO_DEBUG))
 *         dump_table(t);
 */
#define VLOG_ON(prio) VLOG_ENABLED(&vlog__source, (prio))

/* ---- Logging ------------------------------------------------------------ */

/* Log at one priority, from this file's source (VLOG_INIT). The arguments
 * are evaluated only when the message is recorded. */
#ifndef VLOG_NO_SHORT_NAMES
#define VLOG_DEBUG(...) VLOG__LOG(VLOG_PRIO_DEBUG, VLOG__LIMIT_NONE, 0, 0, __VA_ARGS__)
#define VLOG_INFO(...) VLOG__LOG(VLOG_PRIO_INFO, VLOG__LIMIT_NONE, 0, 0, __VA_ARGS__)
#define VLOG_WARN(...) VLOG__LOG(VLOG_PRIO_WARN, VLOG__LIMIT_NONE, 0, 0, __VA_ARGS__)
#define VLOG_ERROR(...) VLOG__LOG(VLOG_PRIO_ERROR, VLOG__LIMIT_NONE, 0, 0, __VA_ARGS__)
#endif

/* Priority chosen at run time; values outside 1..4 are clamped. `prio` is
 * evaluated once; the other arguments only when the message is recorded.
 * VLOG_AT is the same under a name no other logging header uses
 * (VLOG_NO_SHORT_NAMES), as are VLOG_AT_ONCE, VLOG_AT_EVERY_N and
 * VLOG_AT_RATELIMITED below. */
#define VLOG_AT(prio, ...) VLOG__AT(prio, VLOG__LIMIT_NONE, 0, 0, __VA_ARGS__)
#ifndef VLOG_NO_SHORT_NAMES
#define VLOG(prio, ...) VLOG_AT(prio, __VA_ARGS__)
#endif

/* ---- Limits per call site ----------------------------------------------- */

/*
 * A call site that records its first call only (_ONCE), every n-th call
 * from the first (_EVERY_N; `n` a constant), or at most
 * VLOG_RATELIMIT_BURST calls per VLOG_RATELIMIT_SECONDS (_RATELIMITED, the
 * kernel's 10 per 5 s), counting the calls that pass the filters, across
 * threads. A call left out costs about a fifth of a recorded one and takes
 * no lock: its arguments are not evaluated, nothing is formatted or copied,
 * and neither the ring nor any output sees it. The site's next record carries how many were left out
 * (the field VLOG_SUPPRESSED, printed in the text line too), and
 * vlog_stats.suppressed counts them.
 */
#ifndef VLOG_NO_SHORT_NAMES
#define VLOG_DEBUG_ONCE(...) VLOG__LOG(VLOG_PRIO_DEBUG, VLOG__LIMIT_ONCE, 1, 0, __VA_ARGS__)
#define VLOG_INFO_ONCE(...) VLOG__LOG(VLOG_PRIO_INFO, VLOG__LIMIT_ONCE, 1, 0, __VA_ARGS__)
#define VLOG_WARN_ONCE(...) VLOG__LOG(VLOG_PRIO_WARN, VLOG__LIMIT_ONCE, 1, 0, __VA_ARGS__)
#define VLOG_ERROR_ONCE(...) VLOG__LOG(VLOG_PRIO_ERROR, VLOG__LIMIT_ONCE, 1, 0, __VA_ARGS__)
#define VLOG_DEBUG_EVERY_N(n, ...) VLOG__EVERY_N(VLOG_PRIO_DEBUG, n, __VA_ARGS__)
#define VLOG_INFO_EVERY_N(n, ...) VLOG__EVERY_N(VLOG_PRIO_INFO, n, __VA_ARGS__)
#define VLOG_WARN_EVERY_N(n, ...) VLOG__EVERY_N(VLOG_PRIO_WARN, n, __VA_ARGS__)
#define VLOG_ERROR_EVERY_N(n, ...) VLOG__EVERY_N(VLOG_PRIO_ERROR, n, __VA_ARGS__)
#define VLOG_DEBUG_RATELIMITED(...)                                           \
    VLOG_LIMITED(VLOG_PRIO_DEBUG, VLOG_RATELIMIT_BURST, VLOG_RATELIMIT_SECONDS, __VA_ARGS__)
#define VLOG_INFO_RATELIMITED(...)                                            \
    VLOG_LIMITED(VLOG_PRIO_INFO, VLOG_RATELIMIT_BURST, VLOG_RATELIMIT_SECONDS, __VA_ARGS__)
#define VLOG_WARN_RATELIMITED(...)                                            \
    VLOG_LIMITED(VLOG_PRIO_WARN, VLOG_RATELIMIT_BURST, VLOG_RATELIMIT_SECONDS, __VA_ARGS__)
#define VLOG_ERROR_RATELIMITED(...)                                           \
    VLOG_LIMITED(VLOG_PRIO_ERROR, VLOG_RATELIMIT_BURST, VLOG_RATELIMIT_SECONDS, __VA_ARGS__)
#endif

/* The same with the priority as the first argument, chosen at run time
 * (clamped to 1..4, evaluated once). */
#define VLOG_AT_ONCE(prio, ...) VLOG__AT(prio, VLOG__LIMIT_ONCE, 1, 0, __VA_ARGS__)
#define VLOG_AT_EVERY_N(prio, n, ...)                                         \
    do {                                                                      \
        int vlog__at = vlog__clamp(prio);                                     \
        VLOG__EVERY_N(vlog__at, n, __VA_ARGS__);                              \
    } while (0)
#define VLOG_AT_RATELIMITED(prio, ...)                                        \
    VLOG__AT(prio, VLOG__LIMIT_RATE, VLOG_RATELIMIT_BURST, VLOG_RATELIMIT_SECONDS, __VA_ARGS__)

/* At most `burst` calls per `seconds` at priority `prio` (all three
 * constants: `prio` 1..4, `burst` 1..1000000, `seconds` 1..86400, checked
 * at compile time). */
#define VLOG_LIMITED(prio, burst, seconds, ...)                               \
    do {                                                                      \
        VLOG__STATIC_ASSERT((burst) >= 1 && (burst) <= 1000000 &&             \
                                (seconds) >= 1 && (seconds) <= 86400,         \
                            "vlog: VLOG_LIMITED takes a burst of 1 to "       \
                            "1000000 and 1 to 86400 seconds");                \
        VLOG__LOG((prio), VLOG__LIMIT_RATE, (burst), (seconds), __VA_ARGS__); \
    } while (0)
/* VLOG__LOG at a priority chosen at run time, clamped, evaluated once. */
#define VLOG__AT(prio, limit, count, seconds, ...)                            \
    do {                                                                      \
        int vlog__prio = vlog__clamp(prio);                                   \
        VLOG__LOG(vlog__prio, (limit), (count), (seconds), __VA_ARGS__);      \
    } while (0)
/* Every n-th call (a constant, 1 to 2^31 - 1, checked at compile time). */
#define VLOG__EVERY_N(prio, n, ...)                                           \
    do {                                                                      \
        VLOG__STATIC_ASSERT((n) >= 1 && (n) <= 2147483647,                    \
                            "vlog: VLOG_*_EVERY_N takes n from 1");           \
        VLOG__LOG((prio), VLOG__LIMIT_EVERY_N, (n), 0, __VA_ARGS__);          \
    } while (0)

/*
 * The function form of the macros, for wrappers that take a va_list. Checks
 * the filters before any formatting: a message that is not recorded never
 * reaches vsnprintf. Then formats on the stack (one heap buffer for messages
 * longer than VLOG_STACK_MESSAGE; beyond VLOG_MESSAGE_MAX the message is cut
 * with a " [truncated: N bytes]" marker) and hands the bytes to vlog_write().
 * `prio` outside 1..4 is clamped. Returns 1 if recorded, 0 if filtered out,
 * -1 on an internal error.
 * NULL: `src` is the default source, `fmt` logs "(null format)", `file` and
 * `func` are "" and "?"; ownership: nothing kept; errors: -1, never errno;
 * async-signal-safe: no.
 */
static inline __attribute__((format(printf, 6, 0))) int
vlogv(const vlog_source *src, int prio, const char *file, int line, const char *func,
      const char *fmt, va_list ap);

/* vlogv() with variable arguments. A macro of the same name (below) checks
 * the filters inline before the variable arguments are set up; `src` and
 * `prio` are evaluated once, and `(vlog)(...)` still calls the function.
 * Left out under VLOG_NO_SHORT_NAMES (Open vSwitch has a vlog() of its own):
 * vlog_fields() with no fields does the same. */
#ifndef VLOG_NO_SHORT_NAMES
static inline __attribute__((format(printf, 6, 7))) int
vlog(const vlog_source *src, int prio, const char *file, int line, const char *func,
     const char *fmt, ...);

#define vlog(src, prio, ...)                                                  \
    __extension__({                                                           \
        const vlog_source *vlog__src = (src);                                 \
        int vlog__pri = (prio);                                               \
        if (0)                                                                \
            (void)vlog__check_call(__VA_ARGS__);                              \
        vlog__wanted(&vlog__src, &vlog__pri)                                  \
            ? vlog__emit(vlog__src, vlog__pri, __VA_ARGS__)                   \
            : 0;                                                              \
    })
#endif

/* ---- Structured fields -------------------------------------------------- */

/* Field initialisers, for arrays of vlog_field and for VLOG_FIELDS. */
#define VLOG_FIELD_STR(key, value) { (key), (value), 0, 0 }
#define VLOG_FIELD_INT(key, value) { (key), NULL, (int64_t)(value), 1 }

/*
 * A message with structured fields (libvirt's metadata), from this file's
 * source:
 *
 *   VLOG_FIELDS(VLOG_PRIO_INFO,
 *               (VLOG_FIELD_STR("VM", name), VLOG_FIELD_INT("VCPUS", n)),
 *               "started %s", name);
 *
 * String and integer values under names in journald's form (VM) or
 * OpenTelemetry's (http.method; vlog(7), FIELDS), stored in the ring
 * beside the text and printed by every output. The field list (in
 * parentheses) and the arguments are evaluated only when the message is
 * recorded.
 */
#define VLOG_FIELDS(prio, fields, ...)                                        \
    do {                                                                      \
        VLOG__FORMAT_LITERAL(__VA_ARGS__);                                    \
        int vlog__fprio = vlog__clamp(prio);                                  \
        VLOG__SITE(prio, VLOG__LIMIT_NONE, 0, 0, VLOG__FIRST(__VA_ARGS__, 0)); \
        int vlog__level = VLOG__LEVEL(&vlog__here);                           \
        if (VLOG__UNLIKELY(vlog__fprio >= vlog__level) &&                     \
            (vlog__level != 0 || vlog__site_enabled(&vlog__here, vlog__fprio)) && \
            VLOG__ADMIT(&vlog__here, vlog__fprio, VLOG__LIMIT_NONE)) {        \
            const vlog_field vlog__fields[] = {VLOG__UNPAREN fields};         \
            vlog__emit_fields(&vlog__here, vlog__fprio, vlog__fields,         \
                              sizeof vlog__fields / sizeof vlog__fields[0],   \
                              __VA_ARGS__);                                   \
        }                                                                     \
        VLOG__FORMAT_TYPES(__VA_ARGS__)                                       \
    } while (0)

/*
 * Bytes kept as bytes (a packet, a buffer), from this file's source:
 *
 *   VLOG_HEXDUMP(VLOG_PRIO_DEBUG, pkt, len, "rx %zu bytes from %s", len, peer);
 *
 * The message is formatted as VLOG_FIELDS's is; up to VLOG_HEXDUMP_MAX
 * bytes at `ptr` are copied into the record as they are (the rest counted
 * in the field VLOG_HEXDUMP_OMITTED). Text lines show them after the
 * message's line as `hexdump -C` does; the JSON, journald, syslog and
 * fluent outputs as the field VLOG_HEXDUMP, lowercase hex. `ptr`, `len`
 * and the arguments are evaluated only when the message is recorded.
 */
#define VLOG_HEXDUMP(prio, ptr, len, ...)                                     \
    do {                                                                      \
        VLOG__FORMAT_LITERAL(__VA_ARGS__);                                    \
        int vlog__hprio = vlog__clamp(prio);                                  \
        VLOG__SITE(prio, VLOG__LIMIT_NONE, 0, 0, VLOG__FIRST(__VA_ARGS__, 0)); \
        int vlog__level = VLOG__LEVEL(&vlog__here);                           \
        if (VLOG__UNLIKELY(vlog__hprio >= vlog__level) &&                     \
            (vlog__level != 0 || vlog__site_enabled(&vlog__here, vlog__hprio)) && \
            VLOG__ADMIT(&vlog__here, vlog__hprio, VLOG__LIMIT_NONE))          \
            vlog__emit_hexdump(&vlog__here, vlog__hprio, (ptr), (len), __VA_ARGS__); \
        VLOG__FORMAT_TYPES(__VA_ARGS__)                                       \
    } while (0)

/*
 * A message with the backtrace of its call, from this file's source:
 *
 *   VLOG_BACKTRACE(VLOG_PRIO_WARN, "queue %d stalled", q);
 *
 * The message is formatted as VLOG_FIELDS's is; the record keeps the
 * return addresses of the frames that made the call (at most 32) and the
 * loaded objects they are in (path, load address, GNU build-id). Text
 * lines show one frame a line after the message's line; the JSON,
 * journald, syslog and fluent outputs the field VLOG_BACKTRACE. vlog-dump
 * and vlog-ctl name each frame's function, file and line from the objects'
 * symbols and debug information. Any call site gets one from a filter too
 * (`bt:file=disk.c:20`, in VLOG_FILTERS or vlog-ctl SOCKET filters).
 */
#define VLOG_BACKTRACE(prio, ...)                                             \
    do {                                                                      \
        VLOG__FORMAT_LITERAL(__VA_ARGS__);                                    \
        int vlog__bprio = vlog__clamp(prio);                                  \
        VLOG__SITE(prio, VLOG__LIMIT_NONE, 0, 0, VLOG__FIRST(__VA_ARGS__, 0)); \
        int vlog__level = VLOG__LEVEL(&vlog__here);                           \
        if (VLOG__UNLIKELY(vlog__bprio >= vlog__level) &&                     \
            (vlog__level != 0 || vlog__site_enabled(&vlog__here, vlog__bprio)) && \
            VLOG__ADMIT(&vlog__here, vlog__bprio, VLOG__LIMIT_NONE))          \
            vlog__emit_backtrace(&vlog__here, vlog__bprio, __VA_ARGS__);      \
        VLOG__FORMAT_TYPES(__VA_ARGS__)                                       \
    } while (0)

/* ---- Checks ------------------------------------------------------------- */

/*
 * An assumption the program cannot go on without:
 *
 *   VLOG_CHECK(fd >= 0, "no monitor for %s", name);
 *
 * While `cond` holds, the comparison is all it costs: nothing else is
 * evaluated. When it does not, vlog takes its lock for good (no thread
 * records after the check: their calls wait for the end), makes an error
 * record "check failed: fd >= 0: no monitor for guest1" from this file's
 * source whatever the filters say, has the outputs write it (2 s at most),
 * then calls abort(3): the crash handler writes what the files and stderr
 * had not written, its dump (VLOG_DUMP) ends with the check, and the
 * process ends by SIGABRT. From a signal handler that interrupted vlog on
 * the same thread the record is dropped and counted; the abort stays.
 * VLOG_DCHECK is VLOG_CHECK unless NDEBUG is defined where vlog.h is
 * included: then it is nothing, as assert is, and `cond` is not compiled.
 * VLOG_FATAL(fmt, ...) always fails: "fatal: " and the message. It is left
 * out under VLOG_NO_SHORT_NAMES (Open vSwitch has one); VLOG_DIE is the
 * same under a name no other logging header uses.
 */
#define VLOG_CHECK(cond, ...)                                                 \
    do {                                                                      \
        if (VLOG__UNLIKELY(!(cond)))                                          \
            VLOG__FAIL("check failed: ", #cond ": ", __VA_ARGS__);            \
    } while (0)
#ifdef NDEBUG
#define VLOG_DCHECK(cond, ...) ((void)0)
#else
#define VLOG_DCHECK(cond, ...) VLOG_CHECK(cond, __VA_ARGS__)
#endif
#define VLOG_DIE(...) VLOG__FAIL("fatal: ", "", __VA_ARGS__)
#ifndef VLOG_NO_SHORT_NAMES
#define VLOG_FATAL(...) VLOG_DIE(__VA_ARGS__)
#endif

/* The function form: checks the filters first, so a message that is not
 * recorded costs nothing more; then as vlogv() with the fields.
 * NULL: as vlogv(), and `fields` may be NULL when `nfields` is 0;
 * ownership: nothing kept; errors: -1, never errno; async-signal-safe: no. */
static inline __attribute__((format(printf, 8, 9))) int
vlog_fields(const vlog_source *src, int prio, const char *file, int line, const char *func,
            const vlog_field *fields, size_t nfields, const char *fmt, ...);

/* ---- Counters ----------------------------------------------------------- */

/* Fills `*stats` with every counter this header's vlog_stats has (the
 * library is told the struct's size, so a program built against an older
 * header gets the counters it knows, and one built against a newer header
 * zeros for those the library lacks). `(vlog_get_stats)(stats)` calls the
 * exported function, which fills the first header's six counters only.
 * NULL: an error (-1); ownership: `*stats` stays the caller's; errors: -1
 * and vlog_last_error(); async-signal-safe: no. */
#define vlog_get_stats(stats) vlog_get_stats_sized((stats), sizeof(vlog_stats))

/* ========================================================================
 * Internal: the machinery behind the macros above. Not API; it may change
 * with any release (VLOG_ABI_VERSION tells programs and libraries apart).
 * ======================================================================== */

/* Messages up to this many bytes are formatted on the caller's stack; longer
 * ones (up to VLOG_MESSAGE_MAX) take one heap buffer. */
#ifndef VLOG_STACK_MESSAGE
#define VLOG_STACK_MESSAGE 1024
#endif

/* A source's level when nothing from it is recorded. */
#define VLOG__LEVEL_OFF 5

#define VLOG__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define VLOG__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define VLOG__LEVEL(src) __atomic_load_n(&(src)->level, __ATOMIC_RELAXED)
#define VLOG__FIRST(first, ...) first
#define VLOG__UNPAREN(...) __VA_ARGS__

/* How many arguments a macro call has, the format included (1 to 64). */
#define VLOG__NARGS(...) VLOG__NARGS_(__VA_ARGS__, 64, 63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define VLOG__NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, _33, _34, _35, _36, _37, _38, _39, _40, _41, _42, _43, _44, _45, _46, _47, _48, _49, _50, _51, _52, _53, _54, _55, _56, _57, _58, _59, _60, _61, _62, _63, _64, n, ...) n

/* A format alone must be a string literal (or a const char array, such as
 * __func__ or `static const char fmt[] = "..."`), wherever vlog.h is
 * installed and whatever the build's flags: VLOG_INFO(text), a string from
 * outside used as the format, does not compile (log outside text, a
 * translation included, as VLOG_INFO("%s", text)); a static assertion, which
 * no flag and no system directory silences. The arguments are checked
 * against the format (-Wformat, as the build's flags say) by one call that
 * is never made, so each warning shows once, at the caller's format; the
 * calls that do the work carry no format attribute. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define VLOG__STATIC_ASSERT(cond, why) static_assert(cond, why)
#define VLOG__CONST_ARRAY(x)                                                  \
    std::is_same<std::remove_reference<decltype(x)>::type, const char[sizeof(x)]>::value
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define VLOG__STATIC_ASSERT(cond, why) _Static_assert(cond, why)
#define VLOG__CONST_ARRAY(x) VLOG__C_CONST_ARRAY(x)
#else
#define VLOG__STATIC_ASSERT(cond, why) \
    typedef char vlog__format_alone_must_be_a_string_literal[(cond) ? 1 : -1] \
        __attribute__((unused))
#ifdef __cplusplus
#define VLOG__CONST_ARRAY(x) 0
#else
#define VLOG__CONST_ARRAY(x) VLOG__C_CONST_ARRAY(x)
#endif
#endif
/* An array (its type is not the pointer it decays to) of const char. */
#define VLOG__C_CONST_ARRAY(x)                                                \
    (!__builtin_types_compatible_p(__typeof__(x), __typeof__(&*(x))) &&      \
     __extension__ _Generic((x), const char *: 1, default: 0))
#define VLOG__FORMAT_LITERAL(...)                                             \
    VLOG__STATIC_ASSERT(VLOG__NARGS(__VA_ARGS__) > 1 ||                       \
                            __builtin_constant_p(VLOG__FIRST(__VA_ARGS__, 0)) || \
                            VLOG__CONST_ARRAY(VLOG__FIRST(__VA_ARGS__, 0)),   \
                        "vlog: a format alone must be a string literal; "     \
                        "log other text as VLOG_INFO(\"%s\", text)")
/* A call never made, rather than sizeof: a lambda may be an argument in C++. */
#define VLOG__FORMAT_TYPES(...)                                               \
    if (0)                                                                    \
        (void)vlog__check_format(__VA_ARGS__);
static inline VLOG__PRINTF(1, 2) int vlog__check_format(const char *fmt, ...)
{
    (void)fmt;
    return 0;
}
/* vlog()'s: file, line, function, then the format. */
static inline VLOG__PRINTF(4, 5) int vlog__check_call(const char *file, int line,
                                                       const char *func, const char *fmt, ...)
{
    (void)file, (void)line, (void)func, (void)fmt;
    return 0;
}

/* The limit's level: messages at this priority and above are limited at
 * every site (VLOG_RATELIMIT); written by the library, read inline. */
extern int vlog__limit_level;

/* Each object's call sites: the linker gathers the pointer every macro use
 * places in the `vlog_sites` section and names its bounds; weak, for an
 * object with none. */
extern vlog__site *const __start_vlog_sites[] __attribute__((weak, visibility("hidden")));
extern vlog__site *const __stop_vlog_sites[] __attribute__((weak, visibility("hidden")));

/* A macro use's call site: a static that holds what is known at compile
 * time (its source, format, file, function, line, priority and limit; a
 * format or priority that is not a constant is 0), with a pointer to it in
 * the object's `vlog_sites` section. Every field is given, so that
 * -Wmissing-field-initializers has nothing to say. */
#define VLOG__CONSTANT(x, none) (__builtin_constant_p(x) ? (x) : (none))
#define VLOG__SITE(prio, limit, count, seconds, fmt)                          \
    static vlog__site vlog__here = {                                          \
        0, 0, &vlog__source, VLOG__CONSTANT(fmt, (const char *)0), __FILE__,  \
        __func__, __LINE__, VLOG__CONSTANT(prio, 0), (limit), (count),        \
        (seconds), 0, 0, 0, 0, {0}, {0}, 0, 0, 0, 0, 0, 0, 0, 0, 0};          \
    VLOG__SITE_REF
/* C++ puts the statics of inline functions, lambdas and templates in
 * groups of their own, and GCC refuses them beside a plain one in one
 * section ("section type conflict"): a C++ site is learnt on its first
 * call instead. */
#ifdef __cplusplus
#define VLOG__SITE_REF (void)0
#else
#define VLOG__SITE_REF                                                        \
    static vlog__site *const vlog__site_ref                                   \
        __attribute__((section("vlog_sites"), used)) = &vlog__here
#endif

/* A library of another ABI: the object's source and sites are turned off
 * here, in the header's own layout (`level` is every ABI's first field),
 * so that no macro calls into a library that would misread them. */
static inline void vlog__off(vlog_source *src, vlog__site *const *start,
                             vlog__site *const *stop)
{
    __atomic_store_n(&src->level, VLOG__LEVEL_OFF, __ATOMIC_RELAXED);
    for (; start != NULL && start < stop; start++)
        if (*start != NULL)
            __atomic_store_n(&(*start)->level, VLOG__LEVEL_OFF, __ATOMIC_RELAXED);
}

/* Whether a call that passed the filters is recorded: always, unless the
 * site has a limit or VLOG_RATELIMIT covers its priority. */
#define VLOG__ADMIT(site, prio, limit)                                        \
    (((limit) == VLOG__LIMIT_NONE &&                                          \
      (prio) < __atomic_load_n(&vlog__limit_level, __ATOMIC_RELAXED)) ||      \
     vlog__site_admit((site), (prio)))

/* The inline check reads the site's level (0 until the library knows the
 * site: that call asks). Only a string literal format is deferred: a call
 * site keeps its format's address, which a format built in a buffer would
 * reuse with other contents. A call site's first recorded call has the
 * library analyse its format, so later calls pass only what changes. */
#define VLOG__LOG(prio, limit, count, seconds, ...)                           \
    do {                                                                      \
        VLOG__FORMAT_LITERAL(__VA_ARGS__);                                    \
        VLOG__SITE(prio, limit, count, seconds, VLOG__FIRST(__VA_ARGS__, 0)); \
        int vlog__level = VLOG__LEVEL(&vlog__here);                           \
        if (VLOG__UNLIKELY((prio) >= vlog__level) &&                          \
            (vlog__level != 0 || vlog__site_enabled(&vlog__here, (prio))) &&  \
            VLOG__ADMIT(&vlog__here, (prio), (limit))) {                      \
            if (__builtin_constant_p(VLOG__FIRST(__VA_ARGS__, 0)) &&          \
                VLOG__UNLIKELY(__atomic_load_n(&vlog__here.state,             \
                                               __ATOMIC_ACQUIRE) ==           \
                               VLOG__SITE_NEW))                               \
                vlog__site_prepare(&vlog__here, VLOG__FIRST(__VA_ARGS__, 0)); \
            VLOG__RECORD(&vlog__here, (prio), __VA_ARGS__);                   \
        }                                                                     \
        VLOG__FORMAT_TYPES(__VA_ARGS__)                                       \
    } while (0)

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)
/*
 * C11: each argument is captured where it is evaluated, once, as one 64-bit
 * word, and its C type's class is known at compile time (_Generic), so a
 * deferred call passes its words straight to vlog__record: no va_list, no
 * second look at the arguments. The class of `x` is taken from
 * `0 ? (x) : (x)`, which is not evaluated and has the type printf would see
 * (integer promotions applied, arrays and functions made pointers) for any
 * operand, bit-fields and pointers to incomplete types included. The
 * library compares the classes with what the format says (vlog__site.classes)
 * and never reads an argument as what it is not. A format the library does
 * not render, or one that changed, goes to vlog__emit_site and vsnprintf,
 * which evaluates the arguments instead: each call evaluates them once.
 */
static inline uint64_t vlog__word_s(long long v) { return (uint64_t)v; }
static inline uint64_t vlog__word_u(unsigned long long v) { return (uint64_t)v; }
static inline uint64_t vlog__word_d(double v)
{
    uint64_t w;
    memcpy(&w, &v, sizeof w);
    return w;
}
static inline uint64_t vlog__word_p(const volatile void *p) { return (uint64_t)(uintptr_t)p; }
/* long double has no class a deferred format takes (%Lf is formatted at
 * the call): never read. */
static inline uint64_t vlog__word_x(long double v)
{
    (void)v;
    return 0;
}
/* Whether `site` records its calls with format `fmt` as words (a site in an
 * inline function may see other formats: those are formatted at the call). */
static inline int vlog__deferred(const vlog__site *site, const char *fmt)
{
    return __atomic_load_n(&site->state, __ATOMIC_ACQUIRE) == VLOG__SITE_DEFERRED &&
           site->fmt == fmt;
}
#define VLOG__PROMOTED(x) (0 ? (x) : (x))
/* What is left for `default`: pointers, and bit-fields wider than int, whose
 * type (`unsigned long:40`) no association can name. Beside 0ll, a null
 * pointer constant, a pointer stays a pointer and such a bit-field (at most
 * 63 bits: a 64-bit one has its declared type) becomes a long long that
 * holds its value. */
#define VLOG__WIDE(x) (1 ? (x) : 0ll)
/* __int128 has no printf conversion: class 0, which no format takes, so the
 * call records the documented marker ("[arguments do not match the format,
 * not rendered]") instead of a wrong number. */
#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 vlog__int128;
__extension__ typedef unsigned __int128 vlog__uint128;
static inline uint64_t vlog__word_s128(vlog__int128 v)
{
    (void)v;
    return 0;
}
static inline uint64_t vlog__word_u128(vlog__uint128 v)
{
    (void)v;
    return 0;
}
#define VLOG__INT128_WORD vlog__int128: vlog__word_s128, vlog__uint128: vlog__word_u128,
#define VLOG__INT128_CLASS vlog__int128: 0, vlog__uint128: 0,
#else
#define VLOG__INT128_WORD
#define VLOG__INT128_CLASS
#endif
#define VLOG__WORD(x)                                                         \
    _Generic(VLOG__PROMOTED(x),                                               \
        int: vlog__word_s, long: vlog__word_s, long long: vlog__word_s,      \
        unsigned: vlog__word_u, unsigned long: vlog__word_u,                  \
        unsigned long long: vlog__word_u,                                     \
        float: vlog__word_d, double: vlog__word_d,                            \
        long double: vlog__word_x, VLOG__INT128_WORD                          \
        default: _Generic(VLOG__WIDE(x),                                      \
            long long: vlog__word_s, default: vlog__word_p))(x)
#define VLOG__CLASS(x)                                                        \
    ((uint64_t)_Generic(VLOG__PROMOTED(x),                                    \
        int: VLOG__CLASS_INT, long: VLOG__CLASS_INT, long long: VLOG__CLASS_INT, \
        unsigned: VLOG__CLASS_INT, unsigned long: VLOG__CLASS_INT,              \
        unsigned long long: VLOG__CLASS_INT,                                   \
        float: VLOG__CLASS_DOUBLE, double: VLOG__CLASS_DOUBLE,                  \
        long double: 0, VLOG__INT128_CLASS                                    \
        default: _Generic(VLOG__WIDE(x),                                      \
            long long: VLOG__CLASS_INT, default: VLOG__CLASS_POINTER)))

#define VLOG__CAT2(a, b) a##b
#define VLOG__CAT(a, b) VLOG__CAT2(a, b)

/* The words of a call's arguments after the format, each with a leading
 * comma (VLOG__WORDS), and their classes, 2 bits each from the lowest
 * (VLOG__CLASSES). Past VLOG__SITE_MAX_ARGS a format is never deferred:
 * those calls expand to nothing that is used. */
#define VLOG__WORDS(...) VLOG__CAT(VLOG__W, VLOG__NARGS(__VA_ARGS__))(__VA_ARGS__)
#define VLOG__CLASSES(...) VLOG__CAT(VLOG__C, VLOG__NARGS(__VA_ARGS__))(__VA_ARGS__)
#define VLOG__W1(f)
#define VLOG__C1(f) 0
#define VLOG__W2(f, a) , VLOG__WORD(a)
#define VLOG__W3(f, a, ...) , VLOG__WORD(a) VLOG__W2(f, __VA_ARGS__)
#define VLOG__W4(f, a, ...) , VLOG__WORD(a) VLOG__W3(f, __VA_ARGS__)
#define VLOG__W5(f, a, ...) , VLOG__WORD(a) VLOG__W4(f, __VA_ARGS__)
#define VLOG__W6(f, a, ...) , VLOG__WORD(a) VLOG__W5(f, __VA_ARGS__)
#define VLOG__W7(f, a, ...) , VLOG__WORD(a) VLOG__W6(f, __VA_ARGS__)
#define VLOG__W8(f, a, ...) , VLOG__WORD(a) VLOG__W7(f, __VA_ARGS__)
#define VLOG__W9(f, a, ...) , VLOG__WORD(a) VLOG__W8(f, __VA_ARGS__)
#define VLOG__W10(f, a, ...) , VLOG__WORD(a) VLOG__W9(f, __VA_ARGS__)
#define VLOG__W11(f, a, ...) , VLOG__WORD(a) VLOG__W10(f, __VA_ARGS__)
#define VLOG__W12(f, a, ...) , VLOG__WORD(a) VLOG__W11(f, __VA_ARGS__)
#define VLOG__W13(f, a, ...) , VLOG__WORD(a) VLOG__W12(f, __VA_ARGS__)
#define VLOG__W14(f, a, ...) , VLOG__WORD(a) VLOG__W13(f, __VA_ARGS__)
#define VLOG__W15(f, a, ...) , VLOG__WORD(a) VLOG__W14(f, __VA_ARGS__)
#define VLOG__W16(f, a, ...) , VLOG__WORD(a) VLOG__W15(f, __VA_ARGS__)
#define VLOG__W17(f, a, ...) , VLOG__WORD(a) VLOG__W16(f, __VA_ARGS__)
#define VLOG__W18(f, a, ...) , VLOG__WORD(a) VLOG__W17(f, __VA_ARGS__)
#define VLOG__W19(f, a, ...) , VLOG__WORD(a) VLOG__W18(f, __VA_ARGS__)
#define VLOG__W20(f, a, ...) , VLOG__WORD(a) VLOG__W19(f, __VA_ARGS__)
#define VLOG__W21(f, a, ...) , VLOG__WORD(a) VLOG__W20(f, __VA_ARGS__)
#define VLOG__W22(f, a, ...) , VLOG__WORD(a) VLOG__W21(f, __VA_ARGS__)
#define VLOG__W23(f, a, ...) , VLOG__WORD(a) VLOG__W22(f, __VA_ARGS__)
#define VLOG__W24(f, a, ...) , VLOG__WORD(a) VLOG__W23(f, __VA_ARGS__)
#define VLOG__W25(f, a, ...) , VLOG__WORD(a) VLOG__W24(f, __VA_ARGS__)
#define VLOG__W26(f, a, ...) , VLOG__WORD(a) VLOG__W25(f, __VA_ARGS__)
#define VLOG__W27(f, a, ...) , VLOG__WORD(a) VLOG__W26(f, __VA_ARGS__)
#define VLOG__W28(f, a, ...) , VLOG__WORD(a) VLOG__W27(f, __VA_ARGS__)
#define VLOG__W29(f, a, ...) , VLOG__WORD(a) VLOG__W28(f, __VA_ARGS__)
#define VLOG__W30(f, a, ...) , VLOG__WORD(a) VLOG__W29(f, __VA_ARGS__)
#define VLOG__W31(f, a, ...) , VLOG__WORD(a) VLOG__W30(f, __VA_ARGS__)
#define VLOG__W32(f, a, ...) , VLOG__WORD(a) VLOG__W31(f, __VA_ARGS__)
#define VLOG__W33(f, a, ...) , VLOG__WORD(a) VLOG__W32(f, __VA_ARGS__)
#define VLOG__C2(f, a) VLOG__CLASS(a)
#define VLOG__C3(f, a, ...) (VLOG__CLASS(a) | VLOG__C2(f, __VA_ARGS__) << 2)
#define VLOG__C4(f, a, ...) (VLOG__CLASS(a) | VLOG__C3(f, __VA_ARGS__) << 2)
#define VLOG__C5(f, a, ...) (VLOG__CLASS(a) | VLOG__C4(f, __VA_ARGS__) << 2)
#define VLOG__C6(f, a, ...) (VLOG__CLASS(a) | VLOG__C5(f, __VA_ARGS__) << 2)
#define VLOG__C7(f, a, ...) (VLOG__CLASS(a) | VLOG__C6(f, __VA_ARGS__) << 2)
#define VLOG__C8(f, a, ...) (VLOG__CLASS(a) | VLOG__C7(f, __VA_ARGS__) << 2)
#define VLOG__C9(f, a, ...) (VLOG__CLASS(a) | VLOG__C8(f, __VA_ARGS__) << 2)
#define VLOG__C10(f, a, ...) (VLOG__CLASS(a) | VLOG__C9(f, __VA_ARGS__) << 2)
#define VLOG__C11(f, a, ...) (VLOG__CLASS(a) | VLOG__C10(f, __VA_ARGS__) << 2)
#define VLOG__C12(f, a, ...) (VLOG__CLASS(a) | VLOG__C11(f, __VA_ARGS__) << 2)
#define VLOG__C13(f, a, ...) (VLOG__CLASS(a) | VLOG__C12(f, __VA_ARGS__) << 2)
#define VLOG__C14(f, a, ...) (VLOG__CLASS(a) | VLOG__C13(f, __VA_ARGS__) << 2)
#define VLOG__C15(f, a, ...) (VLOG__CLASS(a) | VLOG__C14(f, __VA_ARGS__) << 2)
#define VLOG__C16(f, a, ...) (VLOG__CLASS(a) | VLOG__C15(f, __VA_ARGS__) << 2)
#define VLOG__C17(f, a, ...) (VLOG__CLASS(a) | VLOG__C16(f, __VA_ARGS__) << 2)
#define VLOG__C18(f, a, ...) (VLOG__CLASS(a) | VLOG__C17(f, __VA_ARGS__) << 2)
#define VLOG__C19(f, a, ...) (VLOG__CLASS(a) | VLOG__C18(f, __VA_ARGS__) << 2)
#define VLOG__C20(f, a, ...) (VLOG__CLASS(a) | VLOG__C19(f, __VA_ARGS__) << 2)
#define VLOG__C21(f, a, ...) (VLOG__CLASS(a) | VLOG__C20(f, __VA_ARGS__) << 2)
#define VLOG__C22(f, a, ...) (VLOG__CLASS(a) | VLOG__C21(f, __VA_ARGS__) << 2)
#define VLOG__C23(f, a, ...) (VLOG__CLASS(a) | VLOG__C22(f, __VA_ARGS__) << 2)
#define VLOG__C24(f, a, ...) (VLOG__CLASS(a) | VLOG__C23(f, __VA_ARGS__) << 2)
#define VLOG__C25(f, a, ...) (VLOG__CLASS(a) | VLOG__C24(f, __VA_ARGS__) << 2)
#define VLOG__C26(f, a, ...) (VLOG__CLASS(a) | VLOG__C25(f, __VA_ARGS__) << 2)
#define VLOG__C27(f, a, ...) (VLOG__CLASS(a) | VLOG__C26(f, __VA_ARGS__) << 2)
#define VLOG__C28(f, a, ...) (VLOG__CLASS(a) | VLOG__C27(f, __VA_ARGS__) << 2)
#define VLOG__C29(f, a, ...) (VLOG__CLASS(a) | VLOG__C28(f, __VA_ARGS__) << 2)
#define VLOG__C30(f, a, ...) (VLOG__CLASS(a) | VLOG__C29(f, __VA_ARGS__) << 2)
#define VLOG__C31(f, a, ...) (VLOG__CLASS(a) | VLOG__C30(f, __VA_ARGS__) << 2)
#define VLOG__C32(f, a, ...) (VLOG__CLASS(a) | VLOG__C31(f, __VA_ARGS__) << 2)
#define VLOG__C33(f, a, ...) (VLOG__CLASS(a) | VLOG__C32(f, __VA_ARGS__) << 2)
#define VLOG__W34(...) , 0
#define VLOG__C34(...) 0
#define VLOG__W35(...) , 0
#define VLOG__C35(...) 0
#define VLOG__W36(...) , 0
#define VLOG__C36(...) 0
#define VLOG__W37(...) , 0
#define VLOG__C37(...) 0
#define VLOG__W38(...) , 0
#define VLOG__C38(...) 0
#define VLOG__W39(...) , 0
#define VLOG__C39(...) 0
#define VLOG__W40(...) , 0
#define VLOG__C40(...) 0
#define VLOG__W41(...) , 0
#define VLOG__C41(...) 0
#define VLOG__W42(...) , 0
#define VLOG__C42(...) 0
#define VLOG__W43(...) , 0
#define VLOG__C43(...) 0
#define VLOG__W44(...) , 0
#define VLOG__C44(...) 0
#define VLOG__W45(...) , 0
#define VLOG__C45(...) 0
#define VLOG__W46(...) , 0
#define VLOG__C46(...) 0
#define VLOG__W47(...) , 0
#define VLOG__C47(...) 0
#define VLOG__W48(...) , 0
#define VLOG__C48(...) 0
#define VLOG__W49(...) , 0
#define VLOG__C49(...) 0
#define VLOG__W50(...) , 0
#define VLOG__C50(...) 0
#define VLOG__W51(...) , 0
#define VLOG__C51(...) 0
#define VLOG__W52(...) , 0
#define VLOG__C52(...) 0
#define VLOG__W53(...) , 0
#define VLOG__C53(...) 0
#define VLOG__W54(...) , 0
#define VLOG__C54(...) 0
#define VLOG__W55(...) , 0
#define VLOG__C55(...) 0
#define VLOG__W56(...) , 0
#define VLOG__C56(...) 0
#define VLOG__W57(...) , 0
#define VLOG__C57(...) 0
#define VLOG__W58(...) , 0
#define VLOG__C58(...) 0
#define VLOG__W59(...) , 0
#define VLOG__C59(...) 0
#define VLOG__W60(...) , 0
#define VLOG__C60(...) 0
#define VLOG__W61(...) , 0
#define VLOG__C61(...) 0
#define VLOG__W62(...) , 0
#define VLOG__C62(...) 0
#define VLOG__W63(...) , 0
#define VLOG__C63(...) 0
#define VLOG__W64(...) , 0
#define VLOG__C64(...) 0

#define VLOG__RECORD(site, prio, ...)                                         \
    do {                                                                      \
        if (vlog__deferred((site), VLOG__FIRST(__VA_ARGS__, 0))) {            \
            const uint64_t vlog__words[] = {0 VLOG__WORDS(__VA_ARGS__)};      \
            vlog__record((site), (prio), vlog__words + 1,                     \
                         (int)(sizeof vlog__words / sizeof vlog__words[0]) - 1, \
                         VLOG__CLASSES(__VA_ARGS__));                         \
        } else {                                                              \
            vlog__emit_site((site), (prio), __VA_ARGS__);                     \
        }                                                                     \
    } while (0)
#else
/* C++ and C before C11: the arguments go through a va_list, fetched as the
 * format says (vlog__emit_site). */
#define VLOG__RECORD(site, prio, ...) vlog__emit_site((site), (prio), __VA_ARGS__)
#endif

static inline int vlog__clamp(int prio)
{
    return prio < VLOG_PRIO_DEBUG ? VLOG_PRIO_DEBUG
         : prio > VLOG_PRIO_ERROR ? VLOG_PRIO_ERROR
         : prio;
}

/* What a record keeps beside its message: the bytes VLOG_HEXDUMP gives,
 * or (`backtrace`) VLOG_BACKTRACE's backtrace of the call. */
typedef struct vlog__bytes {
    const void *data;
    size_t size;
    int backtrace;
} vlog__bytes;

/* Hands a formatted message to the library: as the call site's when there
 * is one (its level, limit report and count), else as the source's. */
static inline int vlog__put(const vlog__site *site, const vlog_source *src, int prio,
                            const char *file, int line, const char *func, const char *text,
                            size_t len, size_t full_len, const vlog_field *fields,
                            size_t nfields, const vlog__bytes *dump)
{
    if (dump != NULL && dump->backtrace && site != NULL)
        return vlog__write_site_backtrace(site, prio, text, len, full_len);
    if (dump != NULL && site != NULL)
        return vlog__write_site_hexdump(site, prio, text, len, full_len, dump->data,
                                        dump->size);
    if (dump != NULL)
        return vlog_write_hexdump(src, prio, file, line, func, text, len, full_len,
                                  dump->data, dump->size);
    if (site != NULL)
        return vlog__write_site(site, prio, text, len, full_len, fields, nfields);
    return vlog_write_fields(src, prio, file, line, func, text, len, full_len, fields,
                             nfields);
}

/* Formats and records a message whose filters were already checked, with
 * `nfields` structured fields (NULL and 0 for none) or the bytes of `dump`
 * (NULL for none), for call site `site`
 * (NULL: from `src`, at `file`, `line`, `func`).
 * `checked`: the format is known to have no %n (its call site said so), so
 * the library need not look again. */
static inline VLOG__PRINTF(11, 0) int vlog__emitfv(int checked, const vlog__site *site,
                                                    const vlog_source *src, int prio,
                                                    const char *file, int line,
                                                    const char *func,
                                                    const vlog_field *fields,
                                                    size_t nfields,
                                                    const vlog__bytes *dump,
                                                    const char *fmt, va_list ap)
{
    char stack[VLOG_STACK_MESSAGE];
    va_list again;
    size_t want;
    char *heap;
    int n, rc;

    if (fmt == NULL)
        return vlog__put(site, src, prio, file, line, func, "(null format)", 13, 13,
                         fields, nfields, dump);
    if (!checked && !vlog__format_is_safe(fmt)) {
        /* %n would write through an argument: log the format, not run it. */
        n = snprintf(stack, sizeof stack, "[format with %%n not run] %s", fmt);
        want = n < 0 ? 0 : (size_t)n < sizeof stack ? (size_t)n : sizeof stack - 1;
        return vlog__put(site, src, prio, file, line, func, stack, want, want, fields,
                         nfields, dump);
    }
    va_copy(again, ap);
    n = vsnprintf(stack, sizeof stack, fmt, ap);
    if (n < 0) {
        va_end(again);
        n = snprintf(stack, sizeof stack, "[format error] %s", fmt);
        want = n < 0 ? 0 : (size_t)n < sizeof stack ? (size_t)n : sizeof stack - 1;
        return vlog__put(site, src, prio, file, line, func, stack, want, want, fields,
                         nfields, dump);
    }
    if ((size_t)n < sizeof stack) {
        va_end(again);
        return vlog__put(site, src, prio, file, line, func, stack, (size_t)n, (size_t)n,
                         fields, nfields, dump);
    }
    want = (size_t)n < VLOG_MESSAGE_MAX ? (size_t)n : VLOG_MESSAGE_MAX;
    heap = (char *)malloc(want + 1);
    if (heap == NULL) {
        va_end(again);
        return vlog__put(site, src, prio, file, line, func, stack, sizeof stack - 1,
                         (size_t)n, fields, nfields, dump);
    }
    vsnprintf(heap, want + 1, fmt, again);
    va_end(again);
    rc = vlog__put(site, src, prio, file, line, func, heap, want, (size_t)n, fields,
                   nfields, dump);
    free(heap);
    return rc;
}

/* What the macros call carries no format attribute: each macro checks its
 * format once itself (VLOG__FORMAT_TYPES), and a second check would print
 * each warning twice. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsuggest-attribute=format"
static inline int vlog__emit_fields(const vlog__site *site, int prio,
                                    const vlog_field *fields, size_t nfields,
                                    const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vlog__emitfv(0, site, NULL, prio, NULL, 0, NULL, fields, nfields, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

static inline int vlog__emit_hexdump(const vlog__site *site, int prio, const void *data,
                                     size_t size, const char *fmt, ...)
{
    vlog__bytes dump;
    va_list ap;
    int rc;

    dump.data = data;
    dump.size = size;
    dump.backtrace = 0;
    va_start(ap, fmt);
    rc = vlog__emitfv(0, site, NULL, prio, NULL, 0, NULL, NULL, 0, &dump, fmt, ap);
    va_end(ap);
    return rc;
}

static inline int vlog__emit_backtrace(const vlog__site *site, int prio, const char *fmt, ...)
{
    vlog__bytes kept;
    va_list ap;
    int rc;

    kept.data = NULL;
    kept.size = 0;
    kept.backtrace = 1;
    va_start(ap, fmt);
    rc = vlog__emitfv(0, site, NULL, prio, NULL, 0, NULL, NULL, 0, &kept, fmt, ap);
    va_end(ap);
    return rc;
}

/* A failed check's record, from its own call site (the file's source, an
 * error): `what`, `expr`, then the message; the library records it and
 * aborts. */
#define VLOG__FAIL(what, expr, ...)                                           \
    do {                                                                      \
        VLOG__FORMAT_LITERAL(__VA_ARGS__);                                    \
        VLOG__SITE(VLOG_PRIO_ERROR, VLOG__LIMIT_NONE, 0, 0,                   \
                   VLOG__FIRST(__VA_ARGS__, 0));                              \
        vlog__fail(&vlog__here, (what), (expr), __VA_ARGS__);                 \
        VLOG__FORMAT_TYPES(__VA_ARGS__)                                       \
    } while (0)

static inline __attribute__((noreturn)) void vlog__fail(const vlog__site *site,
                                                        const char *what,
                                                        const char *expr,
                                                        const char *fmt, ...)
{
    char text[VLOG_STACK_MESSAGE];
    size_t len, full;
    va_list ap;
    int n;

    n = snprintf(text, sizeof text, "%s%s", what, expr);
    len = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
    full = len;
    if (fmt != NULL && vlog__format_is_safe(fmt)) {
        va_start(ap, fmt);
        n = vsnprintf(text + len, sizeof text - len, fmt, ap);
        va_end(ap);
    } else {
        /* %n would write through an argument: the format, not run. */
        n = snprintf(text + len, sizeof text - len, "[format with %%n not run] %s",
                     fmt != NULL ? fmt : "(null format)");
    }
    full = n < 0 ? len : len + (size_t)n;
    len = full < sizeof text ? full : sizeof text - 1;
    vlog__check_failed(site, text, len, full);
}

static inline int vlog__emit(const vlog_source *src, int prio, const char *file, int line,
                             const char *func, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vlog__emitfv(0, NULL, src, prio, file, line, func, NULL, 0, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

/*
 * What the VLOG_* macros call once the filters said yes, when the
 * arguments cannot be captured at compile time (C++, C before C11) or the
 * site's format is not deferred. A deferred site's arguments are fetched
 * as its format says, one word each, for vlog__record; a format vlog does
 * not render itself, a format that is not a literal, or a format pointer
 * that changed, is formatted here with vsnprintf.
 */
static inline int vlog__emit_site(vlog__site *site, int prio, const char *fmt, ...)
{
    int state = __atomic_load_n(&site->state, __ATOMIC_ACQUIRE);
    va_list ap;
    int rc;

    va_start(ap, fmt);
    if (state == VLOG__SITE_DEFERRED && site->fmt == fmt) {
        uint64_t words[VLOG__SITE_MAX_ARGS];
        unsigned i, n = 0;

        for (i = 0; i < site->nargs; i++) {
            switch (site->kinds[i]) {
            case VLOG__ARG_INT:
            case VLOG__ARG_COUNT:
                words[n++] = (uint64_t)(int64_t)va_arg(ap, int);
                break;
            case VLOG__ARG_UINT:
                words[n++] = va_arg(ap, unsigned int);
                break;
            case VLOG__ARG_LONG:
                words[n++] = (uint64_t)va_arg(ap, long);
                break;
            case VLOG__ARG_ULONG:
                words[n++] = va_arg(ap, unsigned long);
                break;
            case VLOG__ARG_DOUBLE: {
                double d = va_arg(ap, double);
                memcpy(&words[n++], &d, sizeof d);
                break;
            }
            case VLOG__ARG_STRING:
                words[n++] = (uint64_t)(uintptr_t)va_arg(ap, const char *);
                break;
            case VLOG__ARG_POINTER:
                words[n++] = (uint64_t)(uintptr_t)va_arg(ap, void *);
                break;
            default: /* VLOG__ARG_ERRNO: %m takes no argument */
                break;
            }
        }
        va_end(ap);
        /* Fetched as the format says: the classes are the site's own. */
        return vlog__record(site, prio, words, (int)n, site->classes);
    }
    /* A prepared site whose format did not change was checked for %n. */
    rc = vlog__emitfv((state == VLOG__SITE_DEFERRED || state == VLOG__SITE_FORMAT) &&
                          site->fmt == fmt,
                      site, NULL, prio, NULL, 0, NULL, NULL, 0, NULL, fmt, ap);
    va_end(ap);
    return rc;
}
#pragma GCC diagnostic pop

/* VLOG_ENABLED's body: a source's level is 0 until vlog knows it. */
static inline int vlog__enabled(const vlog_source *src, int prio)
{
    int level;

    if (src == NULL)
        src = &vlog_default_source;
    prio = vlog__clamp(prio);
    level = VLOG__LEVEL(src);
    return prio >= level && (level != 0 || vlog__source_enabled(src, prio));
}

/* Resolves a NULL source to the default one, clamps the priority and tells
 * whether the message is recorded (registering a new source first). */
static inline int vlog__wanted(const vlog_source **src, int *prio)
{
    int level;

    if (*src == NULL)
        *src = &vlog_default_source;
    *prio = vlog__clamp(*prio);
    level = VLOG__LEVEL(*src);
    return *prio >= level && (level != 0 || vlog__source_enabled(*src, *prio));
}

/* The public inline functions declared above. */

static inline int vlogv(const vlog_source *src, int prio, const char *file, int line,
                        const char *func, const char *fmt, va_list ap)
{
    if (!vlog__wanted(&src, &prio))
        return 0;
    return vlog__emitfv(0, NULL, src, prio, file, line, func, NULL, 0, NULL, fmt, ap);
}

#ifndef VLOG_NO_SHORT_NAMES
static inline int(vlog)(const vlog_source *src, int prio, const char *file, int line,
                        const char *func, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vlogv(src, prio, file, line, func, fmt, ap);
    va_end(ap);
    return rc;
}
#endif

static inline int vlog_fields(const vlog_source *src, int prio, const char *file, int line,
                              const char *func, const vlog_field *fields, size_t nfields,
                              const char *fmt, ...)
{
    va_list ap;
    int rc;

    if (!vlog__wanted(&src, &prio))
        return 0;
    va_start(ap, fmt);
    rc = vlog__emitfv(0, NULL, src, prio, file, line, func, fields, nfields, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

#ifdef __cplusplus
}
#endif

#endif /* VLOG_H */
