/* Configuration from the environment; the test driver sets the variables and
 * checks stderr. Logs one message per priority from two sources and dumps
 * the ring to stdout. */
#include "check.h"

VLOG_INIT("qemu.monitor");

static void other_source(void);

int main(void)
{
    vlog_stats stats;

    CHECK(vlog_init() == 0);
    CHECK(vlog_init() == 0); /* idempotent: no second warning */
    VLOG_DEBUG("qemu debug");
    VLOG_INFO("qemu info");
    VLOG_WARN("qemu warning");
    VLOG_ERROR("qemu error");
    other_source();
    CHECK(vlog_get_stats(&stats) == 0);
    printf("buffer_size=%llu\n", (unsigned long long)stats.buffer_size);
    fflush(stdout);
    vlog_dump(1);
    return 0;
}

static vlog_source util = VLOG_SOURCE_INITIALIZER("util.file");

static void other_source(void)
{
    vlog(&util, VLOG_PRIO_DEBUG, __FILE__, __LINE__, __func__, "util debug");
    vlog(&util, VLOG_PRIO_WARN, __FILE__, __LINE__, __func__, "util warning");
}
