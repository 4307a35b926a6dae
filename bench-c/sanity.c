/*
 * Instruction counts for the two paths that matter most, measured under
 * callgrind as the difference between two loop lengths (start-up cancels):
 *
 *   disabled  VLOG_DEBUG with the source at the default level (warning)
 *   ring      VLOG_DEBUG recorded to the ring only (flight recorder: the
 *             filter selects debug, the one output prints errors only)
 *   check     VLOG_CHECK that holds, on a bound the compiler cannot see
 *   backtrace VLOG_BACKTRACE recorded to the ring only, four frames deep
 *
 * Usage: sanity disabled|ring|check|backtrace N. Prints what it verified, so
 * a figure cannot be an artifact of the optimizer: the disabled and check
 * loops must record nothing, the ring and backtrace loops exactly N
 * records, and the check loop must
 * have made its N comparisons (they are counted where the check's message
 * would take them, which holding checks never evaluate).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vlog.h>

VLOG_INIT("bench.sanity");

/* The backtrace's call, three functions below main. */
__attribute__((noinline)) static void traced(long i, long n)
{
    VLOG_BACKTRACE(VLOG_PRIO_DEBUG, "Logging two integers: %ld %ld", i, n - i);
}

__attribute__((noinline)) static void middle(long i, long n)
{
    traced(i, n);
    __asm__ volatile("" ::: "memory"); /* no tail call */
}

__attribute__((noinline)) static void outer(long i, long n)
{
    middle(i, n);
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    vlog_stats before, after;
    long n;

    if (argc != 3 || (strcmp(argv[1], "disabled") != 0 && strcmp(argv[1], "ring") != 0 &&
                      strcmp(argv[1], "check") != 0 && strcmp(argv[1], "backtrace") != 0)) {
        fprintf(stderr, "usage: %s disabled|ring|check|backtrace N\n", argv[0]);
        return 2;
    }
    n = atol(argv[2]);
    if (vlog_set_outputs("4:stderr") != 0 || vlog_set_buffer_size(1 << 20) != 0) {
        fprintf(stderr, "setup: %s\n", vlog_last_error());
        return 1;
    }
    if ((strcmp(argv[1], "ring") == 0 || strcmp(argv[1], "backtrace") == 0) &&
        vlog_set_filters("1:bench") != 0)
        return 1;
    VLOG_ERROR("registers the source before the measured loop");
    vlog_get_stats(&before);

    if (strcmp(argv[1], "disabled") == 0) {
        for (long i = 0; i < n; i++)
            VLOG_DEBUG("Logging two integers: %ld %ld", i, n - i);
    } else if (strcmp(argv[1], "check") == 0) {
        /* A bound the optimizer cannot tie to the loop's own. */
        volatile long opaque = n;
        long bound = opaque, i;

        for (i = 0; i < n; i++)
            VLOG_CHECK(i < bound, "Logging two integers: %ld %ld", i, n - i);
        if (i != n)
            return 1;
    } else if (strcmp(argv[1], "backtrace") == 0) {
        for (long i = 0; i < n; i++)
            outer(i, n);
    } else {
        for (long i = 0; i < n; i++)
            VLOG_DEBUG("Logging two integers: %ld %ld", i, n - i);
    }

    vlog_get_stats(&after);
    long recorded = (long)(after.records - before.records);
    long want = strcmp(argv[1], "ring") == 0 || strcmp(argv[1], "backtrace") == 0 ? n : 0;
    printf("%s: %ld calls, %ld recorded\n", argv[1], n, recorded);
    return recorded == want ? 0 : 1;
}
