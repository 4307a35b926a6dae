/*
 * What a debug statement costs, measured here and now beside printf, for
 * `make demo`: the same statement off (its source filtered out), on (recorded
 * into a full ring, the flight recorder), and the same message formatted by
 * fprintf into /dev/null. The best of five runs of each, in nanoseconds per
 * call; BENCHMARKS.md has the exact instruction counts.
 */
#include <stdio.h>
#include <time.h>

#include <vlog.h>

VLOG_INIT("cost");

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static const char *const verbs[] = {"read", "write"};

/* Each loop is one statement, called `n` times: ns per call, best of 5. */
#define BEST_NS(n, statement)                                                 \
    ({                                                                        \
        double best = 1e30;                                                   \
        for (int run = 0; run < 5; run++) {                                   \
            double start = now_ns();                                          \
            for (int i = 0; i < (n); i++) {                                   \
                statement;                                                    \
            }                                                                 \
            double ns = (now_ns() - start) / (n);                             \
            best = ns < best ? ns : best;                                     \
        }                                                                     \
        best;                                                                 \
    })

int main(void)
{
    FILE *devnull = fopen("/dev/null", "w");

    if (devnull == NULL || vlog_set_outputs("4:stderr") != 0 ||
        vlog_set_filters("") != 0 || vlog_set_level(VLOG_PRIO_WARN) != 0) {
        perror("cost");
        return 1;
    }
    double off = BEST_NS(20000000, VLOG_DEBUG("request %d: %s %zu bytes", i,
                                              verbs[i & 1], (size_t)i * 512));
    /* On: recorded into the ring, which fills and then overwrites its
     * oldest records (the steady state of a daemon that runs for days). */
    vlog_set_filters("1:cost");
    double on = BEST_NS(1000000, VLOG_DEBUG("request %d: %s %zu bytes", i,
                                            verbs[i & 1], (size_t)i * 512));
    double printf_ns = BEST_NS(1000000, fprintf(devnull, "request %d: %s %zu bytes\n", i,
                                                verbs[i & 1], (size_t)i * 512));
    printf("a VLOG_DEBUG that is off:               %7.2f ns per call "
           "(its arguments never evaluated)\n", off);
    printf("the same VLOG_DEBUG on, into the ring:  %7.2f ns per call\n", on);
    printf("fprintf of the same line to /dev/null:  %7.2f ns per call "
           "(%.0f times the call that is off)\n", printf_ns, printf_ns / off);
    fclose(devnull);
    return 0;
}
