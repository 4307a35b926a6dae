/* The call-site dictionary: a program with more call sites than the ring's
 * dictionary holds still reads back every message right (the sites that did
 * not fit carry their names in each record), and a ring replaced by
 * vlog_set_buffer_size keeps the messages and takes the sites again. */
#include "check.h"

VLOG_INIT("test.sites");

#define S(n)                                                                  \
    VLOG_DEBUG("call site %d of many, with a format long enough to fill the " \
               "dictionary sooner: %s",                                       \
               n, "arg");
#define S10(n) S(n##0) S(n##1) S(n##2) S(n##3) S(n##4) S(n##5) S(n##6) S(n##7) S(n##8) S(n##9)
#define S100(n)                                                               \
    S10(n##0) S10(n##1) S10(n##2) S10(n##3) S10(n##4) S10(n##5) S10(n##6)     \
    S10(n##7) S10(n##8) S10(n##9)

static int first_line;

/* 400 call sites, four lines of 100. */
static void log_all(void)
{
    first_line = __LINE__ + 1;
    S100(1)
    S100(2)
    S100(3)
    S100(4)
}

/* Each of the 400 messages once, in order, `copies` times over. */
static void check_all(int copies)
{
    char want[160];
    int records, i, at = 0;
    char *text = check_dump(&records);

    CHECK(records == 400 * copies);
    for (int copy = 0; copy < copies; copy++)
        for (i = 100; i < 500; i++) {
            char *found;
            snprintf(want, sizeof want,
                     ": debug : test.sites : log_all:%d : call site %d of many, with a format "
                     "long enough to fill the dictionary sooner: arg\n",
                     first_line + (i - 100) / 100, i);
            found = strstr(text + at, want);
            if (found == NULL) {
                fprintf(stderr, "missing in copy %d: %s", copy, want);
                exit(1);
            }
            at = (int)(found - text) + 1;
        }
    free(text);
}

int main(void)
{
    CHECK(vlog_set_outputs("4:stderr") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    /* A 128 KiB ring: its 32 KiB dictionary holds about 200 of the sites, and
     * the records of all 400 fit (those of sites left out carry their names
     * and format, about 200 bytes each). */
    CHECK(vlog_set_buffer_size(128 * 1024) == 0);
    log_all();
    check_all(1);
    /* The records move to the new ring as text; the sites' dictionary
     * entries belonged to the old ring and are made again. */
    CHECK(vlog_set_buffer_size(512 * 1024) == 0);
    check_all(1);
    log_all();
    check_all(2);
    return 0;
}
