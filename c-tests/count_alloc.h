/* Counts every call into the allocator: glibc's entry points are interposed
 * (malloc, calloc, realloc and the aligned forms; C++ new goes through them)
 * and forwarded to glibc's own. Include in exactly one file of a program; read
 * count_alloc_calls. Used by the no-allocation test and the benchmarks. */
#ifndef VLOG_COUNT_ALLOC_H
#define VLOG_COUNT_ALLOC_H

#include <errno.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static volatile long count_alloc_calls;

void *malloc(size_t n)
{
    count_alloc_calls++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    count_alloc_calls++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    count_alloc_calls++;
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    count_alloc_calls++;
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    count_alloc_calls++;
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    count_alloc_calls++;
    *out = __libc_memalign(align, n);
    return *out ? 0 : ENOMEM;
}

#ifdef __cplusplus
}
#endif

#endif
