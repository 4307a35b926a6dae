/* What an error's context costs the thread that logs the error: each
 * iteration records DEPTH debug records to the ring only (the flight
 * recorder), then one error, which a file output prints (to /dev/null)
 * before the call returns, with its context of the last N of those
 * records (VLOG_CONTEXT=N/0: every error has one) or with none (N=0).
 * `context N DEPTH ITERATIONS` prints ns per iteration; run under
 * callgrind at two lengths for instructions (bench-c/context.sh). The
 * program checks its own work: every error printed its N records. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <vlog.h>

VLOG_INIT("bench.context");

int main(int argc, char **argv)
{
    char spec[32];
    struct timespec t0, t1;
    vlog_stats before, after;
    long n, depth, iterations;

    if (argc != 4) {
        fprintf(stderr, "usage: context N DEPTH ITERATIONS\n");
        return 2;
    }
    n = atol(argv[1]);
    depth = atol(argv[2]);
    iterations = atol(argv[3]);
    snprintf(spec, sizeof spec, "%ld/0", n);
    if (vlog_set_outputs("3:file:/dev/null") != 0 || vlog_set_filters("1:bench") != 0 ||
        vlog_set_buffer_size(1 << 20) != 0 || vlog_set_context(spec) != 0) {
        fprintf(stderr, "context: %s\n", vlog_last_error());
        return 1;
    }
    VLOG_ERROR("warm-up");
    vlog_get_stats(&before);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < iterations; i++) {
        for (long j = 0; j < depth; j++)
            VLOG_DEBUG("request %ld: step %ld, state %d", i, j, (int)(j * 7 % 5));
        VLOG_ERROR("request %ld failed: %s", i, "device busy");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    vlog_get_stats(&after);
    if ((long)(after.context_records - before.context_records) !=
        iterations * (n < depth ? n : depth)) {
        fprintf(stderr, "context: %llu records printed as context, not %ld\n",
                (unsigned long long)(after.context_records - before.context_records),
                iterations * (n < depth ? n : depth));
        return 1;
    }
    printf("%.1f ns per iteration\n",
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)iterations);
    return 0;
}
