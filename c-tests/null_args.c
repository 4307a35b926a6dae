/* NULL source, format, file, function and message are logged safely. */
#include "check.h"

int main(void)
{
    const char *volatile no_format = NULL;
    const char *volatile no_string = NULL;
    char *dump;
    int records;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog(NULL, VLOG_PRIO_ERROR, NULL, 7, NULL, "no file or func %d", 1) == 1);
    CHECK(vlog(NULL, VLOG_PRIO_ERROR, __FILE__, __LINE__, __func__, no_format) == 1);
    CHECK(vlog_write(NULL, VLOG_PRIO_ERROR, NULL, 0, NULL, NULL, 5, 5) == 1);
    CHECK(vlog(NULL, VLOG_PRIO_ERROR, __FILE__, __LINE__, __func__, "%s", no_string) == 1);
    dump = check_dump(&records);
    CHECK(records == 4);
    CHECK(strstr(dump, ": error : default : ?:7 : no file or func 1\n") != NULL);
    CHECK(strstr(dump, " : (null format)\n") != NULL);
    CHECK(strstr(dump, ": error : default : ?:0 : (null)\n") != NULL);
    CHECK(check_count(dump, "(null)\n") == 2);
    free(dump);

    /* Bad arguments to the API are errors, not crashes. */
    CHECK(vlog_set_filters(NULL) == -1);
    CHECK_ERROR("NULL");
    CHECK(vlog_set_outputs(NULL) == -1);
    CHECK(vlog_get_stats(NULL) == -1);
    CHECK((vlog_get_stats)(NULL) == -1);
    CHECK(vlog_get_stats_sized(NULL, sizeof(vlog_stats)) == -1);
    {
        vlog_stats st;
        CHECK(vlog_get_stats_sized(&st, 0) == -1);
        CHECK_ERROR("size is 0");
    }
    CHECK(vlog_set_context(NULL) == -1);
    CHECK_ERROR("NULL");
    vlog__source_unregister(NULL);
    CHECK(vlog__source_enabled(NULL, VLOG_PRIO_ERROR) == 1);

    /* The deferred-formatting entries check what they are given. */
    {
        static vlog__site site;
        uint64_t word = 7;
        CHECK(vlog__site_prepare(NULL, "%d") == VLOG__SITE_FORMAT);
        CHECK(vlog__site_prepare(&site, NULL) == VLOG__SITE_FORMAT);
        CHECK(site.state == VLOG__SITE_NEW);
        CHECK(vlog__record(NULL, VLOG_PRIO_ERROR, NULL, 0, 0) == -1);
        CHECK(vlog__record(&site, VLOG_PRIO_ERROR, NULL, 0, 0) == -1);
        CHECK(vlog__site_prepare(&site, "n=%d") == VLOG__SITE_DEFERRED);
        CHECK(site.nargs == 1 && site.kinds[0] == VLOG__ARG_INT);
        CHECK(site.nwords == 1 && site.classes == VLOG__CLASS_INT);
        CHECK(vlog__record(&site, VLOG_PRIO_ERROR, NULL, 1, VLOG__CLASS_INT) == -1);
        CHECK(vlog__record(&site, VLOG_PRIO_ERROR, &word, 1, VLOG__CLASS_INT) == 1);
        /* Arguments that are not the format's (another C type, another
         * count) are never read: the format is recorded with a marker. */
        CHECK(vlog__record(&site, VLOG_PRIO_ERROR, &word, 1, VLOG__CLASS_POINTER) == 1);
        CHECK(vlog__record(&site, VLOG_PRIO_ERROR, NULL, 0, 0) == 1);
        CHECK(vlog__record(&site, VLOG_PRIO_ERROR, &word, -1, VLOG__CLASS_INT) == 1);
        /* The catalog's entries: a NULL section or site is nothing. */
        vlog__sites_register(NULL, NULL);
        vlog__sites_register((const vlog__site *const *)&word, NULL);
        vlog__sites_unregister(NULL);
        CHECK(vlog__site_enabled(NULL, VLOG_PRIO_ERROR) == 0);
        CHECK(vlog__site_admit(NULL, VLOG_PRIO_ERROR) == 1);
        CHECK(vlog__write_site(NULL, VLOG_PRIO_ERROR, "x", 1, 1, NULL, 0) == -1);
        CHECK(vlog__write_site(&site, VLOG_PRIO_ERROR, "x", 1, 1, NULL, 1) == -1);
        CHECK(vlog__write_site(&site, VLOG_PRIO_ERROR, NULL, 0, 0, NULL, 0) == 1);
        CHECK(vlog_set_ratelimit(NULL) == -1);
        CHECK_ERROR("NULL");
        CHECK(vlog__format_is_safe(NULL) == 0);
        CHECK(vlog__format_is_safe("%d %s") == 1);
        CHECK(vlog__format_is_safe("%hhn") == 0);
        dump = check_dump(&records);
        CHECK(strstr(dump, ": error : default : ?:0 : n=7\n") != NULL);
        {
            const char *marked = ": error : default : ?:0 : "
                                 "[arguments do not match the format, not rendered] n=%d\n";
            const char *at = strstr(dump, marked);
            CHECK(at != NULL && (at = strstr(at + 1, marked)) != NULL &&
                  strstr(at + 1, marked) != NULL);
        }
        free(dump);
    }
    puts("ok");
    return 0;
}
