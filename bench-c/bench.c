/*
 * vlog and the C loggers people would otherwise pick, side by side, on the six
 * NanoLog messages. Every mode checks that it did its work (or really did
 * nothing), so no figure is an artifact of the optimizer. Built by
 * `make bench-c/bench` (peers found with pkg-config; a missing one is compiled
 * out and reported by `bench-c/run.py`). See BENCHMARKS.md.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <vlog.h>

#include "harness.h"
#include "messages.h"

#ifdef HAVE_GLIB
#include <glib.h>
#endif
#ifdef HAVE_LTTNG
#include <lttng/tracef.h>
#endif
#ifdef HAVE_LOG4C
#include <log4c.h>
#endif

VLOG_INIT("bench.vlog");

static vlog_stats before;
static volatile unsigned long floor_sum;

static unsigned long long vlog_records(void)
{
    vlog_stats s;
    vlog_get_stats(&s);
    return s.records;
}

static void vlog_setup_common(const char *outputs, const char *filters)
{
    if (vlog_set_outputs(outputs) != 0 || vlog_set_filters(filters) != 0 ||
        vlog_set_buffer_size(4 << 20) != 0) {
        fprintf(stderr, "vlog setup: %s\n", vlog_last_error());
        exit(1);
    }
    VLOG_ERROR("registers the source");
    vlog_get_stats(&before);
}

static const char *expect_records(unsigned long long want)
{
    return vlog_records() - before.records == want ? NULL : "wrong number of records";
}

/* -- vlog, disabled macro: the source is at the default level, warning. */
static void disabled_setup(void) { vlog_setup_common("4:file:/dev/null", ""); }
static void disabled_run(int msg, long n) { BENCH_LOOP(msg, n, VLOG_DEBUG); }
static const char *none_recorded(long calls) { (void)calls; return expect_records(0); }

/* -- vlog, disabled macro while a filter names call sites (another file's
 * line, and a function): the site's own level decides, still inline. */
static void site_rule_setup(void)
{
    vlog_setup_common("4:file:/dev/null", "1:file=elsewhere.c:42 1:func=elsewhere");
}

/* -- a call site's limit, steady state: every call passes the filters and
 * all but the first ten are left out (no formatting, no copy, no lock). */
#define VLOG_LIMITED_DEBUG(...) VLOG_LIMITED(VLOG_PRIO_DEBUG, 10, 3600, __VA_ARGS__)
static void limited_setup(void) { vlog_setup_common("4:file:/dev/null", "1:bench.vlog"); }
static void limited_run(int msg, long n) { BENCH_LOOP(msg, n, VLOG_LIMITED_DEBUG); }
static const char *ten_recorded(long calls) { (void)calls; return expect_records(10); }

/* -- VLOG_RATELIMIT on plain VLOG_DEBUG sites: the same, set at run time. */
static void global_limit_setup(void)
{
    limited_setup();
    vlog_set_ratelimit("1:10/3600");
}

/* -- vlog(), the function form, filtered out by a source filter. */
static vlog_source quiet = VLOG_SOURCE_INITIALIZER("bench.quiet");
static void filtered_setup(void)
{
    vlog_setup_common("4:file:/dev/null", "4:bench.quiet");
    vlog__source_enabled(&quiet, VLOG_PRIO_ERROR);
}
#define VLOG_FN(...) vlog(&quiet, VLOG_PRIO_DEBUG, __FILE__, __LINE__, __func__, __VA_ARGS__)
static void filtered_run(int msg, long n) { BENCH_LOOP(msg, n, VLOG_FN); }
static void filtered_fields_setup(void)
{
    vlog_thread_field_set("REQUEST_ID", "req-8f14e45f");
    vlog_thread_field_set_int("ATTEMPT", 2);
    filtered_setup();
}

/* -- vlog to the ring only: the flight-recorder configuration. */
static void ring_setup(void) { vlog_setup_common("4:file:/dev/null", "1:bench.vlog"); }
static void ring_run(int msg, long n) { BENCH_LOOP(msg, n, VLOG_DEBUG); }
static const char *all_recorded(long calls) { return expect_records((unsigned long long)calls); }

/* -- vlog to a full ring, the flight recorder's steady state: the ring is
 * filled with the message first, so every record measured evicts the oldest. */
static void full_setup(void)
{
    vlog_stats now;
    ring_setup();
    do {
        ring_run(bench_msg, 1000);
        vlog_get_stats(&now);
    } while (now.lost == 0);
    before = now;
}
/* -- the same with two fields on the calling thread (a request's id and an
 * integer, vlog_thread_field_set): every record carries them. */
static void set_thread_fields(void)
{
    vlog_thread_field_set("REQUEST_ID", "req-8f14e45f");
    vlog_thread_field_set_int("ATTEMPT", 2);
}
static void full_fields_setup(void)
{
    set_thread_fields();
    full_setup();
}
static void disabled_fields_setup(void)
{
    set_thread_fields();
    disabled_setup();
}
/* A function of its own, so that a profile can collect only the measured
 * calls (valgrind --toggle-collect=full_run). */
static __attribute__((noinline)) void full_run(int msg, long n)
{
    ring_run(msg, n);
    floor_sum++; /* not folded into ring_run, which the fill calls */
}
/* How far the records evicted during a run may be from the records made:
 * eviction frees a 64th of the ring ahead (records are at least 48 bytes),
 * and a wrap pads. */
static unsigned long long evict_slack(const vlog_stats *now)
{
    return now->buffer_size / 64 / 48 + 2;
}
static const char *full_check(long calls)
{
    vlog_stats now;
    const char *wrong = expect_records((unsigned long long)calls);
    unsigned long long evicted;
    vlog_get_stats(&now);
    evicted = now.lost - before.lost;
    /* Records of one size: one evicted per record, give or take the wrap
     * and the 64th of the ring eviction frees ahead. */
    if (evicted + evict_slack(&now) < (unsigned long long)calls ||
        evicted > (unsigned long long)calls + evict_slack(&now))
        wrong = "the ring was not full";
    return wrong;
}

/* -- vlog to the ring and a file output of `form` (file, json): one
 * write(2) per line. */
static char file_path[64];
static int sync_output;
static void file_output_setup(const char *form)
{
    char spec[100];
    int fd;
    snprintf(file_path, sizeof file_path, "/tmp/vlog-bench-%d.%s", (int)getpid(), form);
    fd = open(file_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    close(fd);
    snprintf(spec, sizeof spec, "1:%s:%s%s", form, file_path, sync_output ? "?sync" : "");
    vlog_setup_common(spec, "1:bench.vlog");
}
static void file_setup(void) { file_output_setup("file"); }
static void json_setup(void) { file_output_setup("json"); }
/* A `?sync` file: each line written by its caller before the call returns,
 * as an error's is (the form spdlog's file sink flushed per line matches). */
static void sync_setup(void)
{
    sync_output = 1;
    file_output_setup("file");
}

/* -- the same with a ring that holds the whole run (64 MiB), drained after
 * the warm-up: the writer thread keeps up, and what the calling thread pays
 * for a printed line is measured alone. The ring-only figure beside them
 * uses the same ring. */
static void big_ring(void)
{
    if (vlog_set_buffer_size(64 << 20) != 0) {
        fprintf(stderr, "vlog setup: %s\n", vlog_last_error());
        exit(1);
    }
}
static void drained(void)
{
    if (vlog_flush() != 0) {
        fprintf(stderr, "vlog_flush: %s\n", vlog_last_error());
        exit(1);
    }
}
static void file_burst_setup(void) { file_setup(); big_ring(); bench_settle = drained; }
static void json_burst_setup(void) { json_setup(); big_ring(); bench_settle = drained; }
static void ring_burst_setup(void) { ring_setup(); big_ring(); bench_settle = drained; }
static void sync_burst_setup(void) { sync_setup(); big_ring(); bench_settle = drained; }
/* The same with two fields on the calling thread (set_thread_fields). */
static void ring_burst_fields_setup(void) { set_thread_fields(); ring_burst_setup(); }
static void file_burst_fields_setup(void) { set_thread_fields(); file_burst_setup(); }

static const char *file_check(long calls)
{
    const char *wrong = expect_records((unsigned long long)calls);
    /* The writer thread's last lines, after the measured calls. */
    if (vlog_flush() != 0)
        wrong = "vlog_flush failed";
    /* The set-up's own error line is not one of them. */
    if (bench_count_lines(file_path, "ring_run") != calls)
        wrong = "the file did not get every line";
    unlink(file_path);
    return wrong;
}

/* -- a bare write(2) of a pre-formatted line per call: the floor for files. */
static int bare_fd;
static void bare_setup(void)
{
    snprintf(file_path, sizeof file_path, "/tmp/vlog-bench-%d.log", (int)getpid());
    bare_fd = open(file_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
}
static const char bare_line[] =
    "2026-11-30 13:45:12.345+0000: 4242: debug : bench.vlog : bare_run:99 : "
    "Backup storage speeds (min): 181 MB/s read\n";
static void bare_run(int msg, long n)
{
    (void)msg;
    for (long i = 0; i < n; i++)
        if (write(bare_fd, bare_line, sizeof bare_line - 1) < 0)
            exit(1);
}
static const char *bare_check(long calls)
{
    struct stat st;
    const char *wrong = NULL;
    if (fstat(bare_fd, &st) != 0 || st.st_size != calls * (long)(sizeof bare_line - 1))
        wrong = "the lines did not reach the file";
    unlink(file_path);
    return wrong;
}

/* -- 1, 2, 4 and 8 threads recording into one full ring at once (run.py
 * reports time per message and messages per second). */
BENCH_THREADED(full, ring_run, 1)
BENCH_THREADED(full, ring_run, 2)
BENCH_THREADED(full, ring_run, 4)
BENCH_THREADED(full, ring_run, 8)
static const char *full_check_threads(long calls, int threads)
{
    vlog_stats now;
    vlog_get_stats(&now);
    if (now.records - before.records != (unsigned long long)(calls * threads))
        return "wrong number of records";
    return now.lost - before.lost + evict_slack(&now) + 2 * threads <
                   (unsigned long long)(calls * threads)
               ? "the ring was not full"
               : NULL;
}
static const char *full_check_1(long calls) { return full_check_threads(calls, 1); }
static const char *full_check_2(long calls) { return full_check_threads(calls, 2); }
static const char *full_check_4(long calls) { return full_check_threads(calls, 4); }
static const char *full_check_8(long calls) { return full_check_threads(calls, 8); }

/* -- floors: vsnprintf into a stack buffer; a 64-byte memcpy under a mutex. */
static void floor_snprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void floor_snprintf(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    floor_sum += (unsigned long)vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
}
static void snprintf_run(int msg, long n) { BENCH_LOOP(msg, n, floor_snprintf); }
static const char *sum_positive(long calls)
{
    return floor_sum >= (unsigned long)calls ? NULL : "nothing was formatted";
}

static pthread_mutex_t floor_lock = PTHREAD_MUTEX_INITIALIZER;
static char floor_dst[4096];
static void memcpy_run(int msg, long n)
{
    static const char src[64] = "sixty-four bytes of message under an uncontended mutex";
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&floor_lock);
        memcpy(floor_dst + (i & 63) * 64, src, 64);
        floor_sum += (unsigned char)floor_dst[(i & 63) * 64 + (msg & 7)];
        pthread_mutex_unlock(&floor_lock);
    }
}

/* -- the floor for any ring with one shared position: an atomic add on a
 * counter every thread shares (its cache line moves between cores on each
 * call), then about as much work of the thread's own as vlog's record takes
 * on one thread (a chain of 60 dependent multiplications, written to the
 * thread's own buffer). */
static _Alignas(64) unsigned long shared_position;
static void shared_line_run(int msg, long n)
{
    char dst[64 * 64];
    for (long i = 0; i < n; i++) {
        unsigned long at = __atomic_fetch_add(&shared_position, 1, __ATOMIC_ACQ_REL);
        unsigned long h = at;
        for (int k = 0; k < 60; k++)
            h = h * 0x9E3779B97F4A7C15ul + (unsigned long)k;
        memcpy(dst + (at & 63) * 64, &h, sizeof h);
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
    floor_sum += (unsigned long)msg;
}
BENCH_THREADED(shared_line, shared_line_run, 1)
BENCH_THREADED(shared_line, shared_line_run, 2)
static const char *position_moved(long calls)
{
    return shared_position >= (unsigned long)calls ? NULL : "the counter did not move";
}

/* -- the floor for any one ring that threads share without a lock: a
 * record's place taken by an atomic add on the shared position, the same
 * work as above, then the record (56 bytes, as vlog's staticString) written
 * into one data area all threads write, its first word stored last with
 * release, as a commit word is. Records of different threads share cache
 * lines there, as they do in any one ring: those lines move between cores
 * too. */
#define FLOOR_RING_SIZE (64 * 1024)
#define FLOOR_RECORD 56
static _Alignas(64) unsigned long ring_floor_position;
static _Alignas(64) unsigned char ring_floor_data[FLOOR_RING_SIZE];
static void shared_ring_run(int msg, long n)
{
    for (long i = 0; i < n; i++) {
        unsigned long at = __atomic_fetch_add(&ring_floor_position, FLOOR_RECORD, __ATOMIC_ACQ_REL);
        unsigned long off = at % FLOOR_RING_SIZE, h = at;
        unsigned long *rec;
        if (off + FLOOR_RECORD > FLOOR_RING_SIZE)
            off = 0; /* a wrap's pad, simplified */
        rec = (unsigned long *)(void *)(ring_floor_data + off);
        for (int k = 0; k < 60; k++)
            h = h * 0x9E3779B97F4A7C15ul + (unsigned long)k;
        for (int w = 1; w < FLOOR_RECORD / 8; w++)
            rec[w] = h + (unsigned long)w;
        __atomic_store_n(&rec[0], at | 1, __ATOMIC_RELEASE);
    }
    floor_sum += (unsigned long)msg;
}
BENCH_THREADED(shared_ring, shared_ring_run, 1)
BENCH_THREADED(shared_ring, shared_ring_run, 2)
BENCH_THREADED(shared_ring, shared_ring_run, 8)
static const char *ring_position_moved(long calls)
{
    return ring_floor_position >= (unsigned long)calls * FLOOR_RECORD ? NULL
                                                                      : "the position did not move";
}

/* -- The floor of the short lock: the lock taken only to reserve a place
 * (the position, and a few steps of work for making room) and again to
 * publish it, the rest of the record's work (50 of the 60 multiplications)
 * done outside it. What a ring with one lock held short could reach. */
static pthread_mutex_t short_lock = PTHREAD_MUTEX_INITIALIZER;
static _Alignas(64) unsigned long short_reserved, short_published;
static void short_lock_run(int msg, long n)
{
    char dst[64 * 64];
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&short_lock);
        unsigned long at = short_reserved++;
        unsigned long h = at;
        for (int k = 0; k < 10; k++)
            h = h * 0x9E3779B97F4A7C15ul + (unsigned long)k;
        pthread_mutex_unlock(&short_lock);
        for (int k = 0; k < 50; k++)
            h = h * 0x9E3779B97F4A7C15ul + (unsigned long)k;
        memcpy(dst + (at & 63) * 64, &h, sizeof h);
        __asm__ volatile("" : : "r"(dst) : "memory");
        pthread_mutex_lock(&short_lock);
        short_published++;
        pthread_mutex_unlock(&short_lock);
    }
    floor_sum += (unsigned long)msg;
}
BENCH_THREADED(short_lock, short_lock_run, 1)
BENCH_THREADED(short_lock, short_lock_run, 2)
static const char *all_published(long calls)
{
    return short_published >= (unsigned long)calls && short_published == short_reserved
               ? NULL
               : "not every reserved place was published";
}

/* -- The floor of the issue's own design: one lock taken once, to reserve a
 * record's place in one shared data area (the position, and a few steps of
 * work standing for the 58 instructions vlog holds it for), the record then
 * written outside it and published by its first word stored last with
 * release, as vlog's commit word is. No second lock to publish: what a ring
 * reserved under one short lock could reach at best. */
static pthread_mutex_t one_lock = PTHREAD_MUTEX_INITIALIZER;
static _Alignas(64) unsigned long one_lock_position;
static _Alignas(64) unsigned char one_lock_data[FLOOR_RING_SIZE];
static void one_lock_run(int msg, long n)
{
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&one_lock);
        unsigned long at = one_lock_position;
        unsigned long off = at % FLOOR_RING_SIZE, h = at;
        if (off + FLOOR_RECORD > FLOOR_RING_SIZE)
            at += FLOOR_RING_SIZE - off, off = 0; /* a wrap's pad */
        one_lock_position = at + FLOOR_RECORD;
        for (int k = 0; k < 10; k++)
            h = h * 0x9E3779B97F4A7C15ul + (unsigned long)k;
        pthread_mutex_unlock(&one_lock);
        unsigned long *rec = (unsigned long *)(void *)(one_lock_data + off);
        for (int k = 0; k < 50; k++)
            h = h * 0x9E3779B97F4A7C15ul + (unsigned long)k;
        for (int w = 1; w < FLOOR_RECORD / 8; w++)
            rec[w] = h + (unsigned long)w;
        __atomic_store_n(&rec[0], at | 1, __ATOMIC_RELEASE);
    }
    floor_sum += (unsigned long)msg;
}
BENCH_THREADED(one_lock, one_lock_run, 1)
BENCH_THREADED(one_lock, one_lock_run, 2)
BENCH_THREADED(one_lock, one_lock_run, 8)
static const char *one_lock_moved(long calls)
{
    return one_lock_position >= (unsigned long)calls * FLOOR_RECORD ? NULL
                                                                     : "the position did not move";
}

/* -- glibc syslog, masked by setlogmask: counts what reaches the socket. */
static long sends;
ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    static ssize_t (*real)(int, const void *, size_t, int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "send");
    sends++;
    return real(fd, buf, len, flags);
}
static void syslog_setup(void)
{
    openlog("vlog-bench", LOG_NDELAY, LOG_USER);
    setlogmask(LOG_UPTO(LOG_ERR));
}
#define SYSLOG_DEBUG(...) syslog(LOG_DEBUG, __VA_ARGS__)
static void syslog_run(int msg, long n) { BENCH_LOOP(msg, n, SYSLOG_DEBUG); }
static const char *syslog_check(long calls)
{
    (void)calls;
    return sends == 0 ? NULL : "a masked message was sent";
}

#ifdef HAVE_GLIB
/* -- GLib g_debug through its default writer (debug messages go to stdout),
 * with stdout and stderr sent to a file whose size tells what was printed. */
static int saved_out = -1, saved_err = -1;
static void glib_setup(int debug)
{
    int fd;
    if (debug)
        setenv("G_MESSAGES_DEBUG", "all", 1);
    else
        unsetenv("G_MESSAGES_DEBUG");
    snprintf(file_path, sizeof file_path, "/tmp/vlog-bench-%d.out", (int)getpid());
    fd = open(file_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    fflush(stdout);
    saved_out = dup(1);
    saved_err = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
}
static void glib_off_setup(void) { glib_setup(0); }
static void glib_on_setup(void) { glib_setup(1); }
static void glib_run(int msg, long n) { BENCH_LOOP(msg, n, g_debug); }
static long glib_printed(void)
{
    struct stat st;
    fflush(stdout);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    if (stat(file_path, &st) != 0)
        return -1;
    unlink(file_path);
    return (long)st.st_size;
}
static const char *glib_off_check(long calls)
{
    (void)calls;
    return glib_printed() == 0 ? NULL : "a disabled debug message was printed";
}
static const char *glib_on_check(long calls)
{
    return glib_printed() >= calls * 40 ? NULL : "messages were not printed";
}
#endif

#ifdef HAVE_LTTNG
/* -- LTTng-UST tracef with no session: the event is disabled. The function
 * the macro calls when enabled is interposed to count. */
static long lttng_calls;
void lttng_ust__tracef(const char *fmt, ...)
{
    (void)fmt;
    lttng_calls++;
}
static void lttng_run(int msg, long n) { BENCH_LOOP(msg, n, lttng_ust_tracef); }
static const char *lttng_check(long calls)
{
    (void)calls;
    return lttng_calls == 0 ? NULL : "tracef ran with no session";
}
#endif

#ifdef HAVE_LOG4C
/* -- log4c: a category at error (disabled), or at debug with an appender
 * that counts and discards. */
static long log4c_appended;
static log4c_category_t *log4c_cat;
static int count_append(log4c_appender_t *a, const log4c_logging_event_t *e)
{
    (void)a, (void)e;
    log4c_appended++;
    return 0;
}
static const log4c_appender_type_t counting_type = {"counting", NULL, count_append, NULL};
static void log4c_setup_at(int priority)
{
    log4c_appender_t *app;
    log4c_init();
    log4c_appender_type_set(&counting_type);
    app = log4c_appender_get("counter");
    log4c_appender_set_type(app, &counting_type);
    log4c_cat = log4c_category_get("bench");
    log4c_category_set_appender(log4c_cat, app);
    log4c_category_set_priority(log4c_cat, priority);
}
static void log4c_off_setup(void) { log4c_setup_at(LOG4C_PRIORITY_ERROR); }
static void log4c_on_setup(void) { log4c_setup_at(LOG4C_PRIORITY_DEBUG); }
#define LOG4C_DEBUG(...) log4c_category_log(log4c_cat, LOG4C_PRIORITY_DEBUG, __VA_ARGS__)
static void log4c_run(int msg, long n) { BENCH_LOOP(msg, n, LOG4C_DEBUG); }
static const char *log4c_off_check(long calls)
{
    (void)calls;
    return log4c_appended == 0 ? NULL : "a disabled message was appended";
}
static const char *log4c_on_check(long calls)
{
    return log4c_appended == calls ? NULL : "messages were not appended";
}
#endif

static const struct bench_mode modes[] = {
    {"vlog-disabled", disabled_setup, disabled_run, none_recorded},
    {"vlog-disabled-fields", disabled_fields_setup, disabled_run, none_recorded},
    {"vlog-fn-filtered", filtered_setup, filtered_run, none_recorded},
    {"vlog-fn-filtered-fields", filtered_fields_setup, filtered_run, none_recorded},
    {"vlog-site-rule", site_rule_setup, disabled_run, none_recorded},
    {"vlog-limited", limited_setup, limited_run, ten_recorded},
    {"vlog-global-limit", global_limit_setup, ring_run, ten_recorded},
    {"vlog-ring", ring_setup, ring_run, all_recorded},
    {"vlog-ring-full", full_setup, full_run, full_check},
    {"vlog-ring-full-fields", full_fields_setup, full_run, full_check},
    {"vlog-ring-file", file_setup, ring_run, file_check},
    {"vlog-ring-json", json_setup, ring_run, file_check},
    {"vlog-ring-burst", ring_burst_setup, ring_run, all_recorded},
    {"vlog-file-burst", file_burst_setup, ring_run, file_check},
    {"vlog-json-burst", json_burst_setup, ring_run, file_check},
    {"vlog-sync-burst", sync_burst_setup, ring_run, file_check},
    {"vlog-ring-burst-fields", ring_burst_fields_setup, ring_run, all_recorded},
    {"vlog-file-burst-fields", file_burst_fields_setup, ring_run, file_check},
    {"vlog-threads-1", full_setup, full_run_1, full_check_1},
    {"vlog-threads-2", full_setup, full_run_2, full_check_2},
    {"vlog-threads-4", full_setup, full_run_4, full_check_4},
    {"vlog-threads-8", full_setup, full_run_8, full_check_8},
    {"write-line", bare_setup, bare_run, bare_check},
    {"floor-vsnprintf", NULL, snprintf_run, sum_positive},
    {"floor-memcpy-mutex", NULL, memcpy_run, sum_positive},
    {"floor-shared-line-threads-1", NULL, shared_line_run_1, position_moved},
    {"floor-shared-line-threads-2", NULL, shared_line_run_2, position_moved},
    {"floor-shared-ring-threads-1", NULL, shared_ring_run_1, ring_position_moved},
    {"floor-shared-ring-threads-2", NULL, shared_ring_run_2, ring_position_moved},
    {"floor-shared-ring-threads-8", NULL, shared_ring_run_8, ring_position_moved},
    {"floor-short-lock-threads-1", NULL, short_lock_run_1, all_published},
    {"floor-short-lock-threads-2", NULL, short_lock_run_2, all_published},
    {"floor-one-lock-threads-1", NULL, one_lock_run_1, one_lock_moved},
    {"floor-one-lock-threads-2", NULL, one_lock_run_2, one_lock_moved},
    {"floor-one-lock-threads-8", NULL, one_lock_run_8, one_lock_moved},
    {"syslog-masked", syslog_setup, syslog_run, syslog_check},
#ifdef HAVE_GLIB
    {"glib-disabled", glib_off_setup, glib_run, glib_off_check},
    {"glib-enabled", glib_on_setup, glib_run, glib_on_check},
#endif
#ifdef HAVE_LTTNG
    {"lttng-disabled", NULL, lttng_run, lttng_check},
#endif
#ifdef HAVE_LOG4C
    {"log4c-disabled", log4c_off_setup, log4c_run, log4c_off_check},
    {"log4c-enabled", log4c_on_setup, log4c_run, log4c_on_check},
#endif
    {NULL, NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
    return bench_main(modes, argc, argv);
}
