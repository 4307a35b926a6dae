/* Raises SIGUSR1 on the first allocation after `armed` is set: inside
 * whatever vlog call made it, with vlog's lock held, as a signal that
 * arrives there would. A test sets `in_handler` while its handler runs (an
 * allocation there raises nothing). A tool that owns malloc
 * (AddressSanitizer, valgrind) never calls this one: `interposed` stays 0,
 * and the test leaves that part out and says so. */
#ifndef VLOG_RAISE_IN_MALLOC_H
#define VLOG_RAISE_IN_MALLOC_H

#include <signal.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);

static volatile sig_atomic_t armed, in_handler, interposed;

#if !defined(__SANITIZE_ADDRESS__)
void *malloc(size_t n)
{
    interposed = 1;
    if (armed && !in_handler) {
        armed = 0;
        raise(SIGUSR1);
    }
    return __libc_malloc(n);
}
#endif

#endif
