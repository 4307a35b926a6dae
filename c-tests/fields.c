/* Structured fields: evaluated only when the message is recorded, kept in the
 * ring beside the text, printed by text and JSON outputs, shown by vlog_dump;
 * a bad name is kept visibly, counted and reported once.
 *
 * The budget: a value too large for the 4096 bytes a record's fields take is
 * cut with a mark, counted and said once; a small field beside it and the
 * thread's own keep theirs.
 *
 *   fields TEXT_PATH JSON_PATH      (VLOG_BUFFER_FILE set by the driver) */
#include "check.h"

VLOG_INIT("test.fields");

static int evaluated;

static const char *counted(const char *s)
{
    evaluated++;
    return s;
}

int main(int argc, char **argv)
{
    char outputs[1200], *text;
    vlog_field many[40];
    vlog_stats st;

    CHECK(argc == 3);
    unlink(argv[1]);
    unlink(argv[2]);
    snprintf(outputs, sizeof outputs, "3:file:%s 3:json:%s", argv[1], argv[2]);
    CHECK(vlog_set_outputs(outputs) == 0);
    CHECK(vlog_set_filters("3:test.fields") == 0);

    /* Filtered out: the field list is not even evaluated. */
    VLOG_FIELDS(VLOG_PRIO_DEBUG, (VLOG_FIELD_STR("VM", counted("no"))), "dropped");
    CHECK(evaluated == 0);

    /* Printed by both outputs and kept in the ring. */
    VLOG_FIELDS(VLOG_PRIO_WARN, (VLOG_FIELD_STR("VM", counted("guest1")), VLOG_FIELD_INT("VCPUS", 4),
                                 VLOG_FIELD_INT("DELTA", -7)),
                "started %s", "guest1");
    CHECK(evaluated == 1);
    /* Values with newlines, quotes, escapes and bytes that are not UTF-8. */
    VLOG_FIELDS(VLOG_PRIO_ERROR,
                (VLOG_FIELD_STR("PATH", "/tmp/a b\n\"q\"\x1b[2J\xff"), VLOG_FIELD_STR("NULL_VALUE", NULL)),
                "odd values");
    /* Only in the ring (debug, now recorded): formatted at the call, fields kept. */
    CHECK(vlog_set_filters("1:test.fields") == 0);
    VLOG_FIELDS(VLOG_PRIO_DEBUG, (VLOG_FIELD_INT("N", 1)), "ring only %d", 1);
    /* Bad names: the first kept as VLOG_BAD_FIELD_NAME, the second left
     * out; both counted, the first reported once. */
    VLOG_FIELDS(VLOG_PRIO_WARN, (VLOG_FIELD_STR("bad-name", "x"), VLOG_FIELD_STR("_HIDDEN", "y")),
                "bad names");
    CHECK(vlog_get_stats(&st) == 0 && st.bad_fields == 2);
    /* The function form, and its refusal of a NULL array. */
    {
        vlog_field one[] = {VLOG_FIELD_STR("FORM", "function")};
        CHECK(vlog_fields(NULL, VLOG_PRIO_WARN, __FILE__, __LINE__, __func__, one, 1,
                          "function %s", "form") == 1);
        CHECK(vlog_fields(NULL, VLOG_PRIO_WARN, __FILE__, __LINE__, __func__, NULL, 1,
                          "null fields") == -1);
        CHECK_ERROR("fields is NULL");
    }
    /* More than 32 fields: the first 32 are kept. */
    for (int i = 0; i < 40; i++) {
        static char names[40][16];
        snprintf(names[i], sizeof names[i], "I%d", i);
        vlog_field f = VLOG_FIELD_INT(names[i], i);
        many[i] = f;
    }
    {
        uint64_t before;

        CHECK(vlog_get_stats(&st) == 0);
        before = st.bad_fields;
        CHECK(vlog_fields(NULL, VLOG_PRIO_WARN, __FILE__, __LINE__, __func__, many, 40, "many") == 1);
        /* The 8 beyond 32, counted; and with 8 of the thread's, 16. */
        CHECK(vlog_get_stats(&st) == 0 && st.bad_fields == before + 8);
        for (int i = 0; i < 8; i++) {
            char name[3] = {'T', (char)('0' + i), 0};

            CHECK(vlog_thread_field_set_int(name, i) == 0);
        }
        CHECK(vlog_fields(NULL, VLOG_PRIO_WARN, __FILE__, __LINE__, __func__, many, 40, "many and the thread's") == 1);
        CHECK(vlog_thread_fields_clear() == 0);
        CHECK(vlog_get_stats(&st) == 0 && st.bad_fields == before + 8 + 16);
    }

    /* A 5,000-byte value beside a small field and the thread's request id:
     * cut, with a mark naming its length; the others whole; one more
     * bad field. */
    {
        static char body[5001];
        uint64_t before;

        memset(body, 'b', 5000);
        CHECK(vlog_get_stats(&st) == 0);
        before = st.bad_fields;
        CHECK(vlog_thread_field_set("REQUEST_ID", "r-42") == 0);
        VLOG_FIELDS(VLOG_PRIO_WARN, (VLOG_FIELD_STR("BODY", body), VLOG_FIELD_STR("STATUS", "ok")),
                    "large");
        CHECK(vlog_thread_fields_clear() == 0);
        CHECK(vlog_get_stats(&st) == 0);
        if (st.bad_fields != before + 1) {
            fprintf(stderr, "bad_fields %llu, before %llu\n", (unsigned long long)st.bad_fields,
                    (unsigned long long)before);
            exit(1);
        }
    }

    text = check_dump(NULL);
    CHECK(strstr(text, " : started guest1 [VM=guest1 VCPUS=4 DELTA=-7]\n") != NULL);
    CHECK(strstr(text, " : odd values [PATH=\"/tmp/a b\\n\\\"q\\\"\\x1b[2J\\xff\" NULL_VALUE=(null)]\n") != NULL);
    CHECK(strstr(text, " : ring only 1 [N=1]\n") != NULL);
    CHECK(strstr(text, " : bad names [VLOG_BAD_FIELD_NAME=bad-name]\n") != NULL);
    CHECK(strstr(text, " : function form [FORM=function]\n") != NULL);
    CHECK(strstr(text, " : many [I0=0 I1=1 ") != NULL && strstr(text, " I31=31]\n") != NULL);
    CHECK_HAS(text, " : many and the thread's [I0=0 ");
    CHECK_HAS(text, " I23=23 T0=0 T1=1 T2=2 T3=3 T4=4 T5=5 T6=6 T7=7]\n");
    CHECK(strstr(text, "dropped") == NULL && strstr(text, "null fields") == NULL);
    CHECK_HAS(text, " : large [BODY=\"bbbbbbbbbb");
    CHECK_HAS(text, "bbb [truncated: 5000 bytes]\" STATUS=ok REQUEST_ID=r-42]\n");
    free(text);
    vlog_flush();
    text = check_slurp_path(argv[1]);
    CHECK(strstr(text, " : started guest1 [VM=guest1 VCPUS=4 DELTA=-7]\n") != NULL);
    CHECK(strstr(text, "ring only") == NULL);
    CHECK_HAS(text, "bbb [truncated: 5000 bytes]\" STATUS=ok REQUEST_ID=r-42]\n");
    free(text);
    return 0;
}
