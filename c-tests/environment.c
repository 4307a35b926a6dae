/* Configuration from the environment; the test driver sets the variables and
 * checks stderr. Says what vlog_init refused and whether this file's debug
 * is on (asked before the source's first call, and after), logs one message
 * per priority from two sources and dumps the ring to stdout. */
#include "check.h"

VLOG_INIT("qemu.monitor");

static void other_source(void);
static vlog_source util;

int main(void)
{
    vlog_stats stats;
    int on_before = VLOG_ON(VLOG_PRIO_DEBUG);
    int rc = vlog_init();
    int first;

    if (rc == 1)
        printf("refused=%s\n", vlog_last_error());
    else
        CHECK(rc == 0);
    /* Idempotent: no second warning, the same answer. */
    CHECK(vlog_init() == rc);
    printf("debug_on=%d,%d\n", on_before, VLOG_ON(VLOG_PRIO_DEBUG));
    /* A priority past 4 is clamped to error, on the source's first check
     * (before vlog knows it) as on the next. */
    first = VLOG_ENABLED(&util, 9);
    printf("util_error_on=%d,%d\n", first, VLOG_ENABLED(&util, 9));
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
