/*
 * How long vlog_dump takes on a full 4 MiB ring (what a crash handler or an
 * operator's dump costs): fills the ring until it has overwritten records, then
 * times 11 dumps to /dev/null and prints the median. Checks that each dump
 * wrote every record the ring holds.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <vlog.h>

VLOG_INIT("bench.dump");

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    double ms[11];
    vlog_stats stats;
    int fd = open("/dev/null", O_WRONLY), records = 0;

    if (fd < 0 || vlog_set_outputs("4:stderr") != 0 || vlog_set_buffer_size(4 << 20) != 0 ||
        vlog_set_filters("1:bench") != 0)
        return 1;
    for (long i = 0;; i++) {
        VLOG_DEBUG("Logging two integers: %ld %ld", i, i * 3);
        if ((i & 1023) == 0 && vlog_get_stats(&stats) == 0 && stats.lost > 0)
            break;
    }
    vlog_get_stats(&stats);
    for (int run = 0; run < 11; run++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        records = vlog_dump(fd);
        clock_gettime(CLOCK_MONOTONIC, &b);
        ms[run] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
        if ((unsigned long long)records != stats.records - stats.lost)
            return 1;
    }
    qsort(ms, 11, sizeof ms[0], cmp);
    printf("full 4 MiB ring: %d records; vlog_dump to /dev/null: median %.2f ms (min %.2f, max %.2f) over 11 runs\n",
           records, ms[5], ms[0], ms[10]);
    return 0;
}
