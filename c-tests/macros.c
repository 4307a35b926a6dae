/* The macros: inline check, no argument evaluation when disabled (not even on
 * a source's first call), priorities, and what reaches the ring. */
#include "check.h"

VLOG_INIT("test.macros");

static int evaluated;

static int count(void)
{
    return ++evaluated;
}

int main(void)
{
    char *dump;
    int records;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);

    /* Default level is warning: the very first call, which registers the
     * source, must already skip its arguments. */
    VLOG_DEBUG("debug %d", count());
    VLOG_INFO("info %d", count());
    CHECK(evaluated == 0);
    CHECK(vlog__source.level == VLOG_PRIO_WARN);
    CHECK(!VLOG_ENABLED(&vlog__source, VLOG_PRIO_INFO));
    CHECK(VLOG_ENABLED(&vlog__source, VLOG_PRIO_WARN));

    VLOG_WARN("warn %d", count());
    VLOG_ERROR("error %d", count());
    CHECK(evaluated == 2);

    /* VLOG evaluates its priority once and clamps it. */
    {
        int prio = 0;
        VLOG(prio++, "never %d", count());
        CHECK(prio == 1 && evaluated == 2);
        VLOG(99, "clamped to error %d", count());
        CHECK(evaluated == 3);
        VLOG(-5, "clamped to debug %d", count());
        CHECK(evaluated == 3);
    }

    /* A filter turns debug on for this source only. */
    CHECK(vlog_set_filters("1:macros") == 0);
    CHECK(vlog__source.level == VLOG_PRIO_DEBUG);
    VLOG_DEBUG("now debug %d", count());
    CHECK(evaluated == 4);

    dump = check_dump(&records);
    CHECK(records == 4);
    CHECK(strstr(dump, ": warning : test.macros : main:") != NULL);
    CHECK(strstr(dump, " : warn 1\n") != NULL);
    CHECK(strstr(dump, ": error : test.macros : main:") != NULL);
    CHECK(strstr(dump, " : clamped to error 3\n") != NULL);
    CHECK(strstr(dump, ": debug : test.macros : main:") != NULL);
    CHECK(strstr(dump, " : now debug 4\n") != NULL);
    CHECK(strstr(dump, "info") == NULL);
    free(dump);
    puts("ok");
    return 0;
}
