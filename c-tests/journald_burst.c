/* A burst into journald: 2,000 warnings as fast as a loop makes them, then
 * one error, then exit. Every one must reach journald, whatever its
 * socket's queue (net.unix.max_dgram_qlen) lets through at once: the
 * driver counts them in journalctl. Prints its pid, then what vlog counted
 * lost (vlog_stats.output_lines_lost), which must be 0.
 *
 * With "crash", it crashes right after the warnings, before vlog's writer
 * thread sent them all: journald gets the ones sent and one entry saying
 * how many were not (the crash dump has them).
 *
 *   journald_burst [crash] */
#include "check.h"

#include <signal.h>

VLOG_INIT("test.jburst");

int main(int argc, char **argv)
{
    vlog_stats st;

    CHECK(vlog_set_outputs("1:journald") == 0);
    if (argc == 2 && strcmp(argv[1], "crash") == 0) {
        /* A ring that holds the burst: its lines wait for the writer
         * thread, which lets a burst gather 5 ms before it sends. */
        CHECK(vlog_set_buffer_size(1 << 20) == 0);
        printf("%d\n", (int)getpid());
        fflush(stdout);
        for (int i = 0; i < 2000; i++)
            VLOG_WARN("burst warning %d", i);
        raise(SIGSEGV);
    }
    for (int i = 0; i < 2000; i++)
        VLOG_WARN("burst warning %d", i);
    VLOG_ERROR("burst error after %d warnings", 2000);
    vlog_flush();
    CHECK(vlog_get_stats(&st) == 0);
    printf("%d %llu\n", (int)getpid(), (unsigned long long)st.output_lines_lost);
    return 0;
}
