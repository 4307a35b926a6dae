/* A filtered-out call never formats: a bogus %s pointer does not crash, through
 * the macro, vlog() and vlogv(). */
#include "check.h"

VLOG_INIT("test.filtered");

static int wrapper(const char *fmt, ...) VLOG__PRINTF(1, 2);
static int wrapper(const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vlogv(&vlog__source, VLOG_PRIO_DEBUG, __FILE__, __LINE__, __func__, fmt, ap);
    va_end(ap);
    return rc;
}

static int source_calls, priority_calls, argument_calls;
static const vlog_source *pick_source(void)
{
    source_calls++;
    return &vlog__source;
}
static int pick_priority(void)
{
    priority_calls++;
    return VLOG_PRIO_DEBUG;
}
static int argument(void)
{
    return ++argument_calls;
}

int main(void)
{
    const char *bogus = (const char *)(uintptr_t)16; /* unmapped */
    int records;
    char *dump;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_filters("2:filtered") == 0);
    VLOG_DEBUG("%s", bogus);
    CHECK(vlog(&vlog__source, VLOG_PRIO_DEBUG, __FILE__, __LINE__, __func__, "%s", bogus) == 0);
    CHECK(wrapper("%s", bogus) == 0);
    /* The vlog() macro evaluates the source and priority once and, when the
     * message is filtered out, none of the arguments; the function itself is
     * still there for (vlog)(...) and function pointers. */
    CHECK(vlog(pick_source(), pick_priority(), __FILE__, __LINE__, __func__, "%d", argument()) == 0);
    CHECK(source_calls == 1 && priority_calls == 1 && argument_calls == 0);
    CHECK((vlog)(&vlog__source, VLOG_PRIO_DEBUG, __FILE__, __LINE__, __func__, "%s", bogus) == 0);
    /* The default source has its own level (warning by default). */
    CHECK(vlog(NULL, VLOG_PRIO_INFO, __FILE__, __LINE__, __func__, "%s", bogus) == 0);
    CHECK(vlog(&vlog__source, VLOG_PRIO_INFO, __FILE__, __LINE__, __func__, "%s", "kept") == 1);
    dump = check_dump(&records);
    CHECK(records == 1);
    CHECK(strstr(dump, " : kept\n") != NULL);
    free(dump);
    puts("ok");
    return 0;
}
