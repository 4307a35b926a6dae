/* What a ring costs in memory (vlog(7), RING SIZE): the process's resident
 * set before its first record and after N three-argument debug records, for
 * bench-c/ring_size.sh to print. A ring in anonymous memory is paid for as
 * it fills, so a daemon that records warnings only pays for few pages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vlog.h>

VLOG_INIT("myd.disk");

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 0;
    long before = rss_kib();

    VLOG_WARN("started");
    for (long i = 0; i < n; i++)
        VLOG_DEBUG("request %ld: %s %zu bytes at block %llu", i, i & 1 ? "read" : "write",
                   (size_t)i * 512, (unsigned long long)i * 8);
    long after = rss_kib();

    if (before < 0 || after < 0) {
        fprintf(stderr, "ring_memory: no VmRSS in /proc/self/status\n");
        return 1;
    }
    printf("%ld\n", after - before);
    return 0;
}
