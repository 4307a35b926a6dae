/* What every benchmark program shares: an allocation counter
 * (c-tests/count_alloc.h), a clock, and the command line:
 *
 *     PROGRAM MODE MESSAGE N
 *
 * runs mode MODE on message MESSAGE (0-5) N times after a warm-up, checks that
 * the mode did its work, and prints "ns_per_call allocations_per_call". Include
 * in exactly one file per program. */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../c-tests/count_alloc.h"

/* Under callgrind, what a mode's check reads back (a file's lines) is not
 * counted: it is the benchmark's work, not the logger's, and it costs
 * more for a longer line. Without valgrind's header, no-ops. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_UNCOUNTED_BEGIN() CALLGRIND_STOP_INSTRUMENTATION
#define BENCH_UNCOUNTED_END() CALLGRIND_START_INSTRUMENTATION
#endif
#endif
#ifndef BENCH_UNCOUNTED_BEGIN
#define BENCH_UNCOUNTED_BEGIN() ((void)0)
#define BENCH_UNCOUNTED_END() ((void)0)
#endif

static double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* How many lines of the file at `path` hold `needle` (every line for
 * NULL): a check that every call's line reached a file, not counted under
 * callgrind. -1 when it cannot be read. (Inline: the programs that have no
 * file to check include it too, and -Werror refuses an unused static.) */
static inline long bench_count_lines(const char *path, const char *needle)
{
    char line[4096];
    long count = 0;
    BENCH_UNCOUNTED_BEGIN();
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        while (fgets(line, sizeof line, f))
            if (needle == NULL || strstr(line, needle) != NULL)
                count++;
        fclose(f);
    } else {
        count = -1;
    }
    BENCH_UNCOUNTED_END();
    return count;
}

#ifdef BENCH_LATENCY
/* Built with -DBENCH_LATENCY (bench-c/latency.sh): the time from one call's
 * return to the next one's, every measured call, with the clock read once
 * a call (its own cost, some 20 ns, is in every lap alike). */
static unsigned *bench_laps;
static long bench_nlaps, bench_lap_cap;
static double bench_last;
static inline void bench_lap(void)
{
    double now = bench_now_ns(), lap = now - bench_last;
    if (bench_nlaps < bench_lap_cap)
        bench_laps[bench_nlaps++] = lap > 4e9 ? 4000000000u : (unsigned)lap;
    bench_last = now;
}
static int bench_lap_cmp(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}
#endif

/* A mode: set up, run n calls of message msg, check the result (return a
 * message describing what is wrong, or NULL). */
/* The message being measured, for set-ups that need it (filling a ring
 * with it). */
static int bench_msg;

/* Runs run(msg, n) on each of `threads` threads at once (the calling thread
 * is one of them): n calls per thread. */
struct bench_job {
    void (*run)(int msg, long n);
    int msg;
    long n;
};
static void *bench_thread(void *arg)
{
    struct bench_job *job = (struct bench_job *)arg;
    job->run(job->msg, job->n);
    return NULL;
}
static inline void bench_in_threads(void (*run)(int, long), int threads, int msg, long n)
{
    pthread_t t[16];
    struct bench_job job = {run, msg, n};
    int i;
    for (i = 1; i < threads; i++)
        if (pthread_create(&t[i], NULL, bench_thread, &job) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    run(msg, n);
    for (i = 1; i < threads; i++)
        pthread_join(t[i], NULL);
}
/* A mode's run function for `threads` threads: NAME_run_THREADS. */
#define BENCH_THREADED(name, run, threads)                                    \
    static void name##_run_##threads(int msg, long n)                          \
    {                                                                          \
        bench_in_threads(run, threads, msg, n);                                \
    }

struct bench_mode {
    const char *name;
    void (*setup)(void);
    void (*run)(int msg, long n);
    const char *(*check)(long calls);
};

/* Set by a mode's setup to run after the warm-up, before the measured calls
 * (a background writer drained, say). */
static void (*bench_settle)(void);

static int bench_main(const struct bench_mode *modes, int argc, char **argv)
{
    const struct bench_mode *m = NULL;
    long n, warm, allocs;
    int msg, i;
    double start, ns;
    const char *wrong;

    if (argc != 4) {
        fprintf(stderr, "usage: %s MODE MESSAGE N\nmodes:", argv[0]);
        for (i = 0; modes[i].name; i++)
            fprintf(stderr, " %s", modes[i].name);
        fputc('\n', stderr);
        return 2;
    }
    for (i = 0; modes[i].name; i++)
        if (strcmp(modes[i].name, argv[1]) == 0)
            m = &modes[i];
    if (m == NULL) {
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    msg = atoi(argv[2]);
    n = atol(argv[3]);
    warm = n / 10 + 1;
    bench_msg = msg;
    if (m->setup)
        m->setup();
    m->run(msg, warm);
    if (bench_settle)
        bench_settle();
    allocs = count_alloc_calls;
    /* getppid marks where the measured calls begin and end, for a tracer
     * that counts this thread's system calls between them
     * (bench-c/syscalls.sh). */
    (void)getppid();
#ifdef BENCH_LATENCY
    bench_laps = (unsigned *)malloc((size_t)n * sizeof *bench_laps);
    if (bench_laps == NULL) {
        fprintf(stderr, "no memory for %ld laps\n", n);
        return 1;
    }
    bench_lap_cap = n;
    bench_last = bench_now_ns();
#endif
    start = bench_now_ns();
    m->run(msg, n);
    ns = (bench_now_ns() - start) / (double)n;
    (void)getppid();
    allocs = count_alloc_calls - allocs;
    wrong = m->check(warm + n);
    if (wrong) {
        fprintf(stderr, "%s: %s\n", m->name, wrong);
        return 1;
    }
#ifdef BENCH_LATENCY
    {
        long over = 0, k;
        qsort(bench_laps, (size_t)bench_nlaps, sizeof *bench_laps, bench_lap_cmp);
        for (k = 0; k < bench_nlaps; k++)
            over += bench_laps[k] > 1000000u;
        /* p50 p99 p99.99 max (ns), calls over 1 ms, mean ns */
        printf("%u %u %u %u %ld %.2f\n", bench_laps[bench_nlaps / 2],
               bench_laps[bench_nlaps * 99 / 100], bench_laps[bench_nlaps * 9999 / 10000],
               bench_laps[bench_nlaps - 1], over, ns);
        free(bench_laps);
        return 0;
    }
#endif
    printf("%.2f %.3f\n", ns, (double)allocs / (double)n);
    return 0;
}

#endif
