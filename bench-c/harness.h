/* What every benchmark program shares: an allocation counter (glibc's
 * allocator entry points interposed, so every malloc of the process, C++ new
 * included, is counted), a clock, and the command line:
 *
 *     PROGRAM MODE MESSAGE N
 *
 * runs mode MODE on message MESSAGE (0-5) N times after a warm-up, checks that
 * the mode did its work, and prints "ns_per_call allocations_per_call". Include
 * in exactly one file per program. */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static volatile long bench_allocations;

void *malloc(size_t n)
{
    bench_allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    bench_allocations++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    bench_allocations++;
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    bench_allocations++;
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    bench_allocations++;
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    bench_allocations++;
    *out = __libc_memalign(align, n);
    return *out ? 0 : ENOMEM;
}

#ifdef __cplusplus
}
#endif

static double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A mode: set up, run n calls of message msg, check the result (return a
 * message describing what is wrong, or NULL). */
struct bench_mode {
    const char *name;
    void (*setup)(void);
    void (*run)(int msg, long n);
    const char *(*check)(long calls);
};

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
    if (m->setup)
        m->setup();
    m->run(msg, warm);
    allocs = bench_allocations;
    start = bench_now_ns();
    m->run(msg, n);
    ns = (bench_now_ns() - start) / (double)n;
    allocs = bench_allocations - allocs;
    wrong = m->check(warm + n);
    if (wrong) {
        fprintf(stderr, "%s: %s\n", m->name, wrong);
        return 1;
    }
    printf("%.2f %.3f\n", ns, (double)allocs / (double)n);
    return 0;
}

#endif
