/* vlog_dump: writes to any fd, oldest first; reports a bad fd; writes nothing
 * without a ring. */
#include "check.h"

VLOG_INIT("test.dump");

int main(void)
{
    char *dump, *first, *second;
    int fd[2], records;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    VLOG_ERROR("first");
    VLOG_ERROR("second");

    /* To a pipe. */
    CHECK(pipe(fd) == 0);
    CHECK(vlog_dump(fd[1]) == 2);
    close(fd[1]);
    {
        char buf[4096];
        ssize_t n = read(fd[0], buf, sizeof buf - 1);
        CHECK(n > 0);
        buf[n] = '\0';
        first = strstr(buf, " : first\n");
        second = strstr(buf, " : second\n");
        CHECK(first != NULL && second != NULL && first < second);
        CHECK(check_count(buf, "\n") == 2);
    }
    close(fd[0]);

    /* A bad fd is reported with errno. */
    errno = 0;
    CHECK(vlog_dump(-1) == -1);
    CHECK(errno == EBADF);

    /* Without a ring, nothing to dump, and messages still reach outputs. */
    CHECK(vlog_set_buffer_size(0) == 0);
    dump = check_dump(&records);
    CHECK(records == 0 && dump[0] == '\0');
    free(dump);
    puts("ok");
    return 0;
}
