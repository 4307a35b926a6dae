/* Every record of a call site carries the site's message id, whatever way
 * it took into the ring: its words (ring only, or printed), fields of the
 * call, of the thread, a trace context, a report of calls its limit left
 * out, a message longer than a record keeps, a format left to vsnprintf,
 * a `*` width no reader renders, a priority chosen at run time. The
 * driver checks each line of the JSON output and of the ring (vlog-dump
 * --json) against FNV-1a of the source and the format.
 *
 *   message_ids     (VLOG_OUTPUTS, VLOG_FILTERS, VLOG_BUFFER_FILE set by
 *                    the driver) */
#include "check.h"

VLOG_INIT("test.ids");

/* One site, taken the way the thread's state at the call decides. */
static void plain_site(const char *how)
{
    VLOG_INFO("plain site %s", how);
}

int main(void)
{
    static char big[9000];
    int i;

    /* Its words, ring only and printed; then the same site through the
     * general way: with a thread's field, then with a trace context. */
    plain_site("words");
    VLOG_WARN("printed site %d", 1);
    CHECK(vlog_thread_field_set("REQUEST_ID", "r-7") == 0);
    plain_site("thread field");
    CHECK(vlog_thread_fields_clear() == 0);
    CHECK(vlog_thread_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01") == 0);
    plain_site("trace context");
    CHECK(vlog_thread_fields_clear() == 0);

    /* The call's own fields. */
    VLOG_FIELDS(VLOG_PRIO_INFO, (VLOG_FIELD_STR("STATUS", "ok")), "fields site %d", 2);

    /* Calls its limit left out, reported in its next record. */
    for (i = 0; i < 3; i++)
        VLOG_INFO_EVERY_N(2, "every second %d", i);

    /* Longer than a record keeps: its text made at the call. */
    memset(big, 'x', sizeof big - 1);
    VLOG_INFO("long site %s", big);

    /* A format vlog leaves to vsnprintf (long double). */
    VLOG_INFO("long double %.1Lf", (long double)1.5);

    /* A `*` width beyond what a record asks every reader to render. */
    VLOG_INFO("wide %*d", 2000, 7);

    /* A priority chosen at run time, with an errno text. */
    errno = ENOENT;
    VLOG(VLOG_PRIO_INFO, "run time priority %m");

    vlog_flush();
    return 0;
}
