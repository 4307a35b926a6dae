/* Messages longer than the stack buffer are kept whole up to VLOG_MESSAGE_MAX,
 * then cut with a visible marker giving the full length. */
#include "check.h"

VLOG_INIT("test.long");

int main(void)
{
    static char big[20001];
    char *dump, *line, want[64];
    int records;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    memset(big, 'a', sizeof big - 1);

    /* 5000 bytes: longer than VLOG_STACK_MESSAGE, shorter than the maximum. */
    VLOG_ERROR("start %.5000s end", big);
    /* 20000 bytes: cut. */
    VLOG_ERROR("%s", big);

    dump = check_dump(&records);
    CHECK(records == 2);
    line = strstr(dump, " : start ");
    CHECK(line != NULL);
    CHECK(strncmp(line + 9 + 5000, " end\n", 5) == 0);

    snprintf(want, sizeof want, "a [truncated: %d bytes]\n", 20000);
    line = strstr(dump, want);
    CHECK(line != NULL);
    /* The stored message, marker included, is exactly VLOG_MESSAGE_MAX bytes. */
    {
        char *msg = strstr(dump, " : aaa");
        CHECK(msg != NULL);
        CHECK(strchr(msg, '\n') - (msg + 3) == VLOG_MESSAGE_MAX);
        CHECK(strchr(msg, '\n') + 1 == line + strlen(want));
    }
    free(dump);
    puts("ok");
    return 0;
}
