/*
 * A small storage daemon that shows vlog: three sources (daemon.main,
 * daemon.net, daemon.disk), configured from the environment. `make demo` runs
 * it as a flight recorder: debug messages go to the ring only, stderr shows
 * warnings and errors, an error with the debug records that led to it (its
 * context, VLOG_CONTEXT). When a request fails, the daemon trips over a broken
 * invariant and crashes: the crash handler writes the ring, the debug
 * messages that led there included, to the dump file, and the ring file it
 * kept is read back with vlog-dump after it is gone.
 *
 * `daemon --serve` serves requests until SIGTERM instead, for
 * `make demo-control`: a running daemon whose filters are changed and whose
 * ring is taken through its control socket (VLOG_CONTROL), with vlog-ctl.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <vlog.h>

#include "daemon.h"

VLOG_INIT("daemon.main");

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
}

/* Requests, one every 50 ms, until SIGTERM. */
static int serve(void)
{
    signal(SIGTERM, on_term);
    VLOG_INFO("storage daemon serving, pid %d", (int)getpid());
    for (int id = 100; !stopping; id++) {
        struct request req;
        if (net_receive(id, &req) == 0 && disk_submit(&req) != 0)
            VLOG_ERROR("request %d failed", id);
        usleep(50 * 1000);
    }
    VLOG_INFO("storage daemon stopping");
    return 0;
}

int main(int argc, char **argv)
{
    vlog_stats stats;
    int failed = 0;

    if (argc > 1 && strcmp(argv[1], "--serve") == 0)
        return serve();

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
        usleep(100 * 1000); /* a request every 100 ms: the ring spans real time */
    }

    vlog_get_stats(&stats);
    fprintf(stderr,
            "(the daemon recorded %llu messages; stderr printed the errors, the first with "
            "its context: the debug records before it)\n",
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
