/* Once running, recording a message allocates nothing: not in the header's
 * formatting (messages up to VLOG_STACK_MESSAGE bytes), not in the Rust core,
 * not for the ring or a file output. The program counts every call into the
 * allocator by interposing glibc's entry points. */
#include "check.h"

#include <malloc.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static volatile long allocations;

void *malloc(size_t n)
{
    allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    allocations++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    allocations++;
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    allocations++;
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    allocations++;
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    allocations++;
    *out = __libc_memalign(align, n);
    return *out ? 0 : ENOMEM;
}

VLOG_INIT("test.noalloc");

int main(void)
{
    static char text[900];
    long before;
    vlog_stats stats;

    memset(text, 'x', sizeof text - 1);
    CHECK(vlog_set_outputs("1:file:/dev/null 4:stderr") == 0);
    CHECK(vlog_set_filters("1:noalloc") == 0);
    VLOG_DEBUG("warm-up %d", 0);

    before = allocations;
    for (int i = 0; i < 10000; i++) {
        VLOG_DEBUG("Logging two integers: %d %d", i, -i);
        VLOG_INFO("a string: %s", text + i % 800);
        VLOG_WARN("a double: %f", i * 0.5);
    }
    CHECK(allocations == before);

    /* And the counter does count: a long message takes one heap buffer. */
    VLOG_DEBUG("%s%s", text, text);
    CHECK(allocations == before + 1);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(stats.records == 30002);
    puts("ok");
    return 0;
}
