/*
 * A small storage daemon that shows vlog: three sources (daemon.main,
 * daemon.net, daemon.disk), configured from the environment. `make demo` runs
 * it as a flight recorder: debug messages go to the ring only, stderr shows
 * warnings and errors. When a request fails, the daemon trips over a broken
 * invariant and crashes: the crash handler writes the ring, the debug
 * messages that led there included, to the dump file, and the ring file it
 * kept is read back with vlog-dump after it is gone.
 */
#include <stdio.h>
#include <unistd.h>

#include <vlog.h>

#include "daemon.h"

VLOG_INIT("daemon.main");

int main(void)
{
    vlog_stats stats;
    int failed = 0;

    VLOG_INFO("storage daemon starting, pid %d", (int)getpid());

    for (int id = 1; id <= 40 && !failed; id++) {
        struct request req;
        if (net_receive(id, &req) != 0)
            continue;
        VLOG_DEBUG("request %d: %s %zu bytes at block %llu", id,
                   req.write ? "write" : "read", req.len, req.block);
        if (disk_submit(&req) != 0) {
            VLOG_ERROR("request %d failed", id);
            failed = 1;
        }
    }

    vlog_get_stats(&stats);
    fprintf(stderr, "(the daemon recorded %llu messages; stderr printed the warnings and errors)\n",
            (unsigned long long)stats.records);

    /* A request that failed leaves its buffer behind; the cleanup code does
     * not expect that, and crashes. */
    VLOG_DEBUG("cleaning up after the failed request");
    {
        volatile char *buffer = NULL;
        buffer[0] = 0;
    }
    return 0;
}
