/* syslog(3) as a daemon calls it, for comparing glibc's with
 * libvlog-syslog.so's (bench-c/syslog.sh runs both, in one run):
 *
 *     bench-c/syslog MODE N [ROUNDS]
 *
 * MODE `masked`: the message's priority is outside setlogmask's mask;
 * `sent`: it is not (what happens to it is the library's and the
 * environment's business). Makes N calls per round after a warm-up of N,
 * and prints the median round's ns per call. Knows nothing of vlog: built
 * as Debian builds (_FORTIFY_SOURCE=2, so it calls __syslog_chk). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void calls(long n)
{
    long i;

    for (i = 0; i < n; i++)
        syslog(LOG_INFO, "request %ld from %s took %ld us", i, "10.0.0.7", i * 3 % 1000);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    double ns[31], start;
    long n;
    int rounds, r;

    if (argc < 3 || (strcmp(argv[1], "masked") != 0 && strcmp(argv[1], "sent") != 0)) {
        fprintf(stderr, "usage: syslog masked|sent N [ROUNDS]\n");
        return 2;
    }
    n = atol(argv[2]);
    rounds = argc > 3 ? atoi(argv[3]) : 1;
    if (rounds < 1 || rounds > 31 || n < 1) {
        fprintf(stderr, "syslog: N must be at least 1 and ROUNDS 1 to 31\n");
        return 2;
    }
    openlog("bench", LOG_PID, LOG_DAEMON);
    if (strcmp(argv[1], "masked") == 0)
        setlogmask(LOG_UPTO(LOG_NOTICE));
    calls(n);
    for (r = 0; r < rounds; r++) {
        start = now_ns();
        calls(n);
        ns[r] = (now_ns() - start) / (double)n;
    }
    qsort(ns, (size_t)rounds, sizeof ns[0], by_value);
    printf("%.1f\n", ns[rounds / 2]);
    return 0;
}
