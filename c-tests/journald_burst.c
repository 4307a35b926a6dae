/* A burst into journald: 2,000 warnings as fast as a loop makes them, then
 * one error, then exit. Every one must reach journald, whatever its
 * socket's queue (net.unix.max_dgram_qlen) lets through at once: the
 * driver counts them in journalctl. Prints its pid, then what vlog counted
 * lost (vlog_stats.output_lines_lost), which must be 0. */
#include "check.h"

VLOG_INIT("test.jburst");

int main(void)
{
    vlog_stats st;

    CHECK(vlog_set_outputs("1:journald") == 0);
    for (int i = 0; i < 2000; i++)
        VLOG_WARN("burst warning %d", i);
    VLOG_ERROR("burst error after %d warnings", 2000);
    vlog_flush();
    CHECK(vlog_get_stats(&st) == 0);
    printf("%d %llu\n", (int)getpid(), (unsigned long long)st.output_lines_lost);
    return 0;
}
