/* A program built with the vlog.h of ABI 3 (c-tests/abi3/, the header of
 * the release before the call-site catalog), run with this library: it
 * loads (the names its macros call are still there, for -z now), is told
 * once to rebuild, and logs nothing through its macros. */
#include <stdio.h>
#include <vlog.h>

VLOG_INIT("abi.old");

int main(void)
{
    vlog_stats stats;

    if (vlog_set_outputs("4:stderr") != 0)
        return 1;
    VLOG_ERROR("from an old build");
    VLOG_DEBUG("and a deferred one %d", 7);
    VLOG_FIELDS(VLOG_PRIO_ERROR, (VLOG_FIELD_INT("N", 1)), "with a field");
    if (vlog_get_stats(&stats) != 0 || stats.records != 0) {
        fprintf(stderr, "recorded %llu\n", (unsigned long long)stats.records);
        return 2;
    }
    puts("ok");
    return 0;
}
