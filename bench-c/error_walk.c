/* What an error costs its caller after a long quiet spell of the flight
 * recorder: another thread records RECORDS debug records to the ring only
 * (a 256 MiB ring holds them all), then the main thread logs one error,
 * which a file output (/dev/null) prints before the call returns. The
 * outputs read the ring from where they stopped, so the error's caller
 * walks past every record since the last line printed; with VLOG_CONTEXT
 * (read from the environment, so the program builds against any release)
 * it also looks for its context. `error_walk RECORDS` prints the error
 * call's time; bench-c/error_walk.sh runs it beside the commit before. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <vlog.h>

VLOG_INIT("bench.walk");

static long records;

static void *fill(void *arg)
{
    (void)arg;
    for (long i = 0; i < records; i++)
        VLOG_DEBUG("filler %ld with some words", i);
    return NULL;
}

int main(int argc, char **argv)
{
    struct timespec t0, t1;
    pthread_t t;
    vlog_stats st;

    if (argc != 2) {
        fprintf(stderr, "usage: error_walk RECORDS\n");
        return 2;
    }
    records = atol(argv[1]);
    if (vlog_set_outputs("3:file:/dev/null") != 0 || vlog_set_filters("1:bench") != 0 ||
        vlog_set_buffer_size(256 << 20) != 0) {
        fprintf(stderr, "error_walk: %s\n", vlog_last_error());
        return 1;
    }
    VLOG_ERROR("the last line printed before the quiet spell");
    pthread_create(&t, NULL, fill, NULL);
    pthread_join(t, NULL);
    VLOG_DEBUG("the error's own story");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    VLOG_ERROR("the error");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    vlog_get_stats(&st);
    if ((long)st.records != records + 3 || st.lost != 0) {
        fprintf(stderr, "error_walk: %llu records, %llu lost\n", (unsigned long long)st.records,
                (unsigned long long)st.lost);
        return 1;
    }
    printf("%.2f ms\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e6);
    return 0;
}
