/* A logging call never changes errno, even when vlog initialises itself on the
 * first call (probing for a ring file that does not exist), takes the deferred
 * path, formats at the call, or writes to an output that fails (/dev/full:
 * ENOSPC); %m shows the caller's errno. */
#include "check.h"

VLOG_INIT("test.errno");

#define KEPT(call)                                                            \
    do {                                                                      \
        errno = 4242;                                                         \
        call;                                                                 \
        CHECK(errno == 4242);                                                 \
    } while (0)

int main(int argc, char **argv)
{
    char *text;

    (void)argc;
    /* The environment (set by the test runner) names a ring file that does
     * not exist yet and an output that fails on every write. */
    CHECK(getenv("VLOG_BUFFER_FILE") != NULL);
    KEPT(VLOG_DEBUG("first call of %s: vlog initialises here", argv[0]));
    KEPT(VLOG_DEBUG("deferred: %d %s", 1, "two"));
    KEPT(VLOG_ERROR("printed to /dev/full, which fails: %d", 3));
    KEPT(VLOG_ERROR("again, the failure already reported"));
    KEPT(vlog(NULL, VLOG_PRIO_ERROR, __FILE__, __LINE__, __func__, "function form %d", 4));
    KEPT(vlog_write(NULL, VLOG_PRIO_ERROR, "f.c", 1, "fn", "raw", 3, 3));
    errno = ENOENT;
    VLOG_DEBUG("deferred %%m: %m");
    CHECK(errno == ENOENT);
    VLOG_ERROR("printed %%m: %m");
    CHECK(errno == ENOENT);

    text = check_dump(NULL);
    CHECK(strstr(text, "deferred %m: No such file or directory\n") != NULL);
    CHECK(strstr(text, "printed %m: No such file or directory\n") != NULL);
    CHECK(strstr(text, "deferred: 1 two\n") != NULL);
    free(text);
    return 0;
}
