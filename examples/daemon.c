/*
 * A small storage daemon that shows vlog: three sources (daemon.main,
 * daemon.net, daemon.disk), configured from the environment. `make demo` runs
 * it as a flight recorder: debug messages go to the ring only, stderr shows
 * warnings and errors. When a request fails, the daemon first dumps the ring
 * on purpose (vlog_dump), then trips over a broken invariant and crashes: the
 * crash handler dumps the ring again, and the ring file it kept is read back
 * with vlog-dump after it is gone.
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

    vlog_init();
    VLOG_INFO("storage daemon starting, pid %d", (int)getpid());

    for (int id = 1; id <= 40 && !failed; id++) {
        struct request req;
        if (net_receive(id, &req) != 0)
            continue;
        VLOG_DEBUG("request %d: %s %zu bytes at block %llu", id,
                   req.write ? "write" : "read", req.len, req.block);
        if (disk_submit(&req) != 0) {
            VLOG_ERROR("request %d failed; dumping the flight recorder", id);
            failed = 1;
        }
    }

    vlog_get_stats(&stats);
    fprintf(stderr, "\n--- vlog_dump: the ring (%llu records written, %llu overwritten) ---\n",
            (unsigned long long)stats.records, (unsigned long long)stats.lost);
    vlog_dump(2);
    fprintf(stderr, "--- end of vlog_dump ---\n\n");

    /* A request that failed leaves its buffer behind; the cleanup code does
     * not expect that, and crashes. */
    VLOG_DEBUG("cleaning up after the failed request");
    {
        volatile char *buffer = NULL;
        buffer[0] = 0;
    }
    return 0;
}
