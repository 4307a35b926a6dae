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
 * This file: the version, the macros and the inline functions of the API
 * first; then, under "Internal", the machinery they expand to, which is not
 * API (names starting with vlog__ or VLOG__ are vlog's own).
 */
#ifndef VLOG_H
#define VLOG_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vlog_gen.h"

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
 * once and the source stays off, never silent corruption); a destructor
 * unregisters the source when the object is unloaded (dlclose), so the
 * library never touches a source that is gone.
 */
#define VLOG_INIT(name)                                                       \
    static vlog_source vlog__source = VLOG_SOURCE_INITIALIZER(name);          \
    __attribute__((constructor)) static void vlog__source_init(void)          \
    {                                                                         \
        if (vlog_abi_check(VLOG_ABI_VERSION, sizeof(vlog_source),             \
                           sizeof(vlog_site)) != 0)                           \
            __atomic_store_n(&vlog__source.level, VLOG__LEVEL_OFF,            \
                             __ATOMIC_RELAXED);                               \
    }                                                                         \
    __attribute__((destructor)) static void vlog__source_fini(void)           \
    {                                                                         \
        vlog_source_unregister(&vlog__source);                                \
    }                                                                         \
    static void vlog__source_fini(void)

/* True when a message of priority `prio` from `src` may be recorded: the one
 * load and compare that every macro does inline. A source not yet registered
 * (level 0) passes here; the macros then register it before evaluating any
 * argument. */
#define VLOG_ENABLED(src, prio) ((prio) >= VLOG__LEVEL(src))

/* ---- Logging ------------------------------------------------------------ */

/* Log at one priority, from this file's source (VLOG_INIT). The arguments
 * are evaluated only when the message is recorded. */
#define VLOG_DEBUG(...) VLOG__LOG(VLOG_PRIO_DEBUG, __VA_ARGS__)
#define VLOG_INFO(...) VLOG__LOG(VLOG_PRIO_INFO, __VA_ARGS__)
#define VLOG_WARN(...) VLOG__LOG(VLOG_PRIO_WARN, __VA_ARGS__)
#define VLOG_ERROR(...) VLOG__LOG(VLOG_PRIO_ERROR, __VA_ARGS__)

/* Priority chosen at run time; values outside 1..4 are clamped. `prio` is
 * evaluated once; the other arguments only when the message is recorded. */
#define VLOG(prio, ...)                                                       \
    do {                                                                      \
        int vlog__prio = vlog__clamp(prio);                                   \
        VLOG__LOG(vlog__prio, __VA_ARGS__);                                   \
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
 * `prio` are evaluated once, and `(vlog)(...)` still calls the function. */
static inline __attribute__((format(printf, 6, 7))) int
vlog(const vlog_source *src, int prio, const char *file, int line, const char *func,
     const char *fmt, ...);

#define vlog(src, prio, ...)                                                  \
    __extension__({                                                           \
        const vlog_source *vlog__src = (src);                                 \
        int vlog__pri = (prio);                                               \
        vlog__wanted(&vlog__src, &vlog__pri)                                  \
            ? vlog__emit(vlog__src, vlog__pri, __VA_ARGS__)                   \
            : 0;                                                              \
    })

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
 * String and integer values under journald-style names, stored in the ring
 * beside the text and printed by every output. The field list (in
 * parentheses) and the arguments are evaluated only when the message is
 * recorded.
 */
#define VLOG_FIELDS(prio, fields, ...)                                        \
    do {                                                                      \
        VLOG__FORMAT_CHECKS_ON                                                \
        int vlog__fprio = vlog__clamp(prio);                                  \
        int vlog__level = VLOG__LEVEL(&vlog__source);                         \
        if (VLOG__UNLIKELY(vlog__fprio >= vlog__level) &&                     \
            (vlog__level != 0 ||                                              \
             vlog_source_enabled(&vlog__source, vlog__fprio))) {              \
            const vlog_field vlog__fields[] = {VLOG__UNPAREN fields};         \
            vlog__emit_fields(&vlog__source, vlog__fprio, __FILE__, __LINE__, \
                              __func__, vlog__fields,                         \
                              sizeof vlog__fields / sizeof vlog__fields[0],   \
                              __VA_ARGS__);                                   \
        }                                                                     \
        VLOG__FORMAT_CHECKS_OFF                                               \
    } while (0)

/* The function form: checks the filters first, so a message that is not
 * recorded costs nothing more; then as vlogv() with the fields.
 * NULL: as vlogv(), and `fields` may be NULL when `nfields` is 0;
 * ownership: nothing kept; errors: -1, never errno; async-signal-safe: no. */
static inline __attribute__((format(printf, 8, 9))) int
vlog_fields(const vlog_source *src, int prio, const char *file, int line, const char *func,
            const vlog_field *fields, size_t nfields, const char *fmt, ...);

/* ========================================================================
 * Internal: the machinery behind the macros above. Not API; it may change
 * with any release (VLOG_ABI_VERSION tells programs and libraries apart).
 * ======================================================================== */

/* Messages up to this many bytes are formatted on the caller's stack; longer
 * ones (up to VLOG_MESSAGE_MAX) take one heap buffer. */
#ifndef VLOG_STACK_MESSAGE
#define VLOG_STACK_MESSAGE 1024
#endif

/* The lowest priority that any output prints; written by the library, read
 * inline (a message below it can be recorded without being formatted). */
extern int vlog_print_level;

/* A source's level when nothing from it is recorded. */
#define VLOG__LEVEL_OFF 5

#define VLOG__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define VLOG__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define VLOG__LEVEL(src) __atomic_load_n(&(src)->level, __ATOMIC_RELAXED)
#define VLOG__FIRST(first, ...) first
#define VLOG__UNPAREN(...) __VA_ARGS__

/* The macros make -Wformat-security an error for their own expansion,
 * whatever the build's flags: VLOG_INFO(text), a string from outside used as
 * the format, does not compile. Log outside text as VLOG_INFO("%s", text). */
#define VLOG__FORMAT_CHECKS_ON                                                \
    _Pragma("GCC diagnostic push")                                            \
    _Pragma("GCC diagnostic error \"-Wformat-security\"")
#define VLOG__FORMAT_CHECKS_OFF _Pragma("GCC diagnostic pop")

/* Only a string literal format is deferred: a call site keeps its format's
 * address, which a format built in a buffer would reuse with other contents.
 * A call site's first call has the library analyse its format (and keep its
 * file, line and function), so later calls pass only what changes. */
#define VLOG__LOG(prio, ...)                                                  \
    do {                                                                      \
        VLOG__FORMAT_CHECKS_ON                                                \
        static vlog_site vlog__site;                                          \
        int vlog__level = VLOG__LEVEL(&vlog__source);                         \
        if (VLOG__UNLIKELY((prio) >= vlog__level) &&                          \
            (vlog__level != 0 ||                                              \
             vlog_source_enabled(&vlog__source, (prio)))) {                   \
            if (__builtin_constant_p(VLOG__FIRST(__VA_ARGS__, 0))) {          \
                if (VLOG__UNLIKELY(__atomic_load_n(&vlog__site.state,         \
                                                   __ATOMIC_ACQUIRE) ==       \
                                   VLOG_SITE_NEW))                            \
                    vlog_site_prepare(&vlog__site, VLOG__FIRST(__VA_ARGS__, 0), \
                                      __FILE__, __LINE__, __func__);          \
                vlog__emit_site(&vlog__site, &vlog__source, (prio),           \
                                __VA_ARGS__);                                 \
            } else {                                                          \
                vlog__emit(&vlog__source, (prio), __FILE__, __LINE__,         \
                           __func__, __VA_ARGS__);                            \
            }                                                                 \
        }                                                                     \
        VLOG__FORMAT_CHECKS_OFF                                               \
    } while (0)

static inline int vlog__clamp(int prio)
{
    return prio < VLOG_PRIO_DEBUG ? VLOG_PRIO_DEBUG
         : prio > VLOG_PRIO_ERROR ? VLOG_PRIO_ERROR
         : prio;
}

/* Formats and records a message whose filters were already checked, with
 * `nfields` structured fields (NULL and 0 for none).
 * `checked`: the format is known to have no %n (its call site said so), so
 * the library need not look again. */
static inline VLOG__PRINTF(9, 0) int vlog__emitfv(int checked,
                                                   const vlog_source *src, int prio,
                                                   const char *file, int line,
                                                   const char *func,
                                                   const vlog_field *fields,
                                                   size_t nfields,
                                                   const char *fmt, va_list ap)
{
    char stack[VLOG_STACK_MESSAGE];
    va_list again;
    size_t want;
    char *heap;
    int n, rc;

    if (fmt == NULL)
        return vlog_write_fields(src, prio, file, line, func, "(null format)", 13, 13,
                                 fields, nfields);
    if (!checked && !vlog_format_is_safe(fmt)) {
        /* %n would write through an argument: log the format, not run it. */
        n = snprintf(stack, sizeof stack, "[format with %%n not run] %s", fmt);
        want = n < 0 ? 0 : (size_t)n < sizeof stack ? (size_t)n : sizeof stack - 1;
        return vlog_write_fields(src, prio, file, line, func, stack, want, want,
                                 fields, nfields);
    }
    va_copy(again, ap);
    n = vsnprintf(stack, sizeof stack, fmt, ap);
    if (n < 0) {
        va_end(again);
        n = snprintf(stack, sizeof stack, "[format error] %s", fmt);
        want = n < 0 ? 0 : (size_t)n < sizeof stack ? (size_t)n : sizeof stack - 1;
        return vlog_write_fields(src, prio, file, line, func, stack, want, want,
                                 fields, nfields);
    }
    if ((size_t)n < sizeof stack) {
        va_end(again);
        return vlog_write_fields(src, prio, file, line, func, stack, (size_t)n, (size_t)n,
                                 fields, nfields);
    }
    want = (size_t)n < VLOG_MESSAGE_MAX ? (size_t)n : VLOG_MESSAGE_MAX;
    heap = (char *)malloc(want + 1);
    if (heap == NULL) {
        va_end(again);
        return vlog_write_fields(src, prio, file, line, func, stack, sizeof stack - 1,
                                 (size_t)n, fields, nfields);
    }
    vsnprintf(heap, want + 1, fmt, again);
    va_end(again);
    rc = vlog_write_fields(src, prio, file, line, func, heap, want, (size_t)n,
                           fields, nfields);
    free(heap);
    return rc;
}

static inline VLOG__PRINTF(7, 0) int vlog__emitv(int checked,
                                                  const vlog_source *src, int prio,
                                                  const char *file, int line,
                                                  const char *func,
                                                  const char *fmt, va_list ap)
{
    return vlog__emitfv(checked, src, prio, file, line, func, NULL, 0, fmt, ap);
}

static inline VLOG__PRINTF(8, 9) int vlog__emit_fields(const vlog_source *src, int prio,
                                                        const char *file, int line,
                                                        const char *func,
                                                        const vlog_field *fields,
                                                        size_t nfields,
                                                        const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vlog__emitfv(0, src, prio, file, line, func, fields, nfields, fmt, ap);
    va_end(ap);
    return rc;
}

static inline VLOG__PRINTF(6, 7) int vlog__emit(const vlog_source *src, int prio,
                                                 const char *file, int line,
                                                 const char *func,
                                                 const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vlog__emitv(0, src, prio, file, line, func, fmt, ap);
    va_end(ap);
    return rc;
}

/*
 * What the VLOG_* macros call for a literal format once the filters said yes
 * and the call site is prepared. The arguments are captured raw (strings by
 * value) and the text is made only when the record is read. A message an
 * output prints (it needs the text now), a format vlog does not render itself,
 * a format pointer that changes between calls and arguments too long for a
 * record are formatted here instead, with vsnprintf.
 */
static inline VLOG__PRINTF(4, 5) int vlog__emit_site(vlog_site *site,
                                                      const vlog_source *src,
                                                      int prio, const char *fmt,
                                                      ...)
{
    int state = __atomic_load_n(&site->state, __ATOMIC_ACQUIRE);
    va_list ap;
    int rc;

    va_start(ap, fmt);
    /* Deferred only when no output prints the message: an output needs the
     * text now, and vsnprintf makes it faster than rendering it later. */
    if (state == VLOG_SITE_DEFERRED && site->fmt == fmt &&
        prio < __atomic_load_n(&vlog_print_level, __ATOMIC_RELAXED)) {
        vlog_arg args[VLOG_SITE_MAX_ARGS];
        int saved_errno = site->has_errno ? errno : 0;
        unsigned i;

        for (i = 0; i < site->nargs; i++) {
            switch (site->kinds[i]) {
            case VLOG_ARG_INT:
            case VLOG_ARG_COUNT:
                args[i].bits = (uint64_t)(int64_t)va_arg(ap, int);
                break;
            case VLOG_ARG_UINT:
                args[i].bits = va_arg(ap, unsigned int);
                break;
            case VLOG_ARG_LONG:
                args[i].bits = (uint64_t)va_arg(ap, long);
                break;
            case VLOG_ARG_ULONG:
                args[i].bits = va_arg(ap, unsigned long);
                break;
            case VLOG_ARG_DOUBLE: {
                double d = va_arg(ap, double);
                memcpy(&args[i].bits, &d, sizeof d);
                break;
            }
            case VLOG_ARG_STRING:
                args[i].str = va_arg(ap, const char *);
                break;
            case VLOG_ARG_POINTER:
                args[i].bits = (uint64_t)(uintptr_t)va_arg(ap, void *);
                break;
            default: /* VLOG_ARG_ERRNO: %m */
                args[i].str = strerror(saved_errno);
                break;
            }
        }
        rc = vlog_write_args(src, prio, site, args, (int)site->nargs);
        va_end(ap);
        if (rc != VLOG_FORMAT_AT_CALL)
            return rc;
        if (site->has_errno)
            errno = saved_errno; /* for %m */
        va_start(ap, fmt);
    }
    /* A prepared site whose format did not change was checked for %n. */
    rc = vlog__emitv((state == VLOG_SITE_DEFERRED || state == VLOG_SITE_FORMAT) &&
                         site->fmt == fmt,
                     src, prio, site->file, site->line, site->func, fmt, ap);
    va_end(ap);
    return rc;
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
    return *prio >= level && (level != 0 || vlog_source_enabled(*src, *prio));
}

/* The public inline functions declared above. */

static inline int vlogv(const vlog_source *src, int prio, const char *file, int line,
                        const char *func, const char *fmt, va_list ap)
{
    if (!vlog__wanted(&src, &prio))
        return 0;
    return vlog__emitv(0, src, prio, file, line, func, fmt, ap);
}

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

static inline int vlog_fields(const vlog_source *src, int prio, const char *file, int line,
                              const char *func, const vlog_field *fields, size_t nfields,
                              const char *fmt, ...)
{
    va_list ap;
    int rc;

    if (!vlog__wanted(&src, &prio))
        return 0;
    va_start(ap, fmt);
    rc = vlog__emitfv(0, src, prio, file, line, func, fields, nfields, fmt, ap);
    va_end(ap);
    return rc;
}

#ifdef __cplusplus
}
#endif

#endif /* VLOG_H */
