/* vlog_shutdown returns vlog to its state before the first call; logging
 * afterwards starts it again. */
#include "check.h"

VLOG_INIT("test.shutdown");

int main(void)
{
    vlog_stats stats;
    int records;
    char *dump;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    VLOG_DEBUG("before");
    CHECK(vlog__source.level == VLOG_PRIO_DEBUG);
    vlog_shutdown();
    vlog_shutdown();
    CHECK(vlog__source.level == 0);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(stats.buffer_size == 0 && stats.records == 0);

    /* Started again from the environment: default level warning again. */
    VLOG_DEBUG("dropped");
    VLOG_WARN("after");
    CHECK(vlog__source.level == VLOG_PRIO_WARN);
    dump = check_dump(&records);
    CHECK(records == 1);
    CHECK(strstr(dump, " : after\n") != NULL);
    free(dump);
    puts("ok");
    return 0;
}
