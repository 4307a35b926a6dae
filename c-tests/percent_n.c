/* %n is never executed, through the macros or the function forms: the
 * message shows the format instead, and the argument is not written. */
#include "check.h"

VLOG_INIT("test.percent_n");

int main(void)
{
    int written = -1;
    char *dump;
    int records;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    VLOG_ERROR("macro %d%n", 42, &written);
    CHECK(vlog(&vlog__source, VLOG_PRIO_ERROR, __FILE__, __LINE__, __func__, "function%n", &written) == 1);
    CHECK(written == -1);
    dump = check_dump(&records);
    CHECK(records == 2);
    CHECK(strstr(dump, " : [format with %n not run] macro %d%n\n") != NULL);
    CHECK(strstr(dump, " : [format with %n not run] function%n\n") != NULL);
    free(dump);
    puts("ok");
    return 0;
}
