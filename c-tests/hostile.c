/* Hostile message contents are logged safely and visibly, the same in an
 * output (formatted at the call) and in the ring (deferred, rendered when
 * read): NUL bytes from %c, invalid UTF-8, terminal escape sequences (C0 and
 * C1), backslashes, NULL strings. Each message stays one line. */
#include "check.h"

VLOG_INIT("test.hostile");

static const char *const want[] = {
    ": nul \\x00 inside\n",
    ": ab then the rest\n",
    ": bytes \\xff\\xfe\\xc3 end\n",
    ": clear \\x1b[2J and \\xc2\\x9b2J csi\n",
    ": path C:\\\\dir and a real \\\\n\n",
    ": null (null) string\n",
    ": multi\\nline\\r\\nmessage\n",
};

static void log_all(int prio)
{
    /* volatile: the compiler must not see (and refuse) the NULL. */
    const char *volatile null_text = NULL;

    VLOG(prio, "nul %c inside", 0);
    VLOG(prio, "%.*s then the rest", 5, "ab\0cd");
    VLOG(prio, "bytes %s end", "\xff\xfe\xc3");
    VLOG(prio, "clear %s and %s csi", "\x1b[2J", "\xc2\x9b" "2J");
    VLOG(prio, "path %s and a real \\n", "C:\\dir");
    VLOG(prio, "null %s string", null_text);
    VLOG(prio, "multi\nline\r\nmessage");
}

/* Each message `copies` times, one line each, nothing raw that a terminal
 * would obey. */
static void check_text(const char *what, const char *text, int copies)
{
    size_t i, n = sizeof want / sizeof want[0];

    for (i = 0; i < n; i++)
        if (check_count(text, want[i]) != copies) {
            fprintf(stderr, "%s: \"%s\" not %d times in:\n%s\n", what, want[i], copies, text);
            exit(1);
        }
    CHECK(check_count(text, "\n") == copies * (int)n);
    CHECK(strchr(text, '\x1b') == NULL && strstr(text, "\xc2\x9b") == NULL);
}

int main(int argc, char **argv)
{
    char outputs[600], *text;

    CHECK(argc == 2);
    snprintf(outputs, sizeof outputs, "4:file:%s", argv[1]);
    unlink(argv[1]);
    CHECK(vlog_set_outputs(outputs) == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    /* Errors are printed: formatted at the call with vsnprintf. */
    log_all(VLOG_PRIO_ERROR);
    /* Debug messages only go to the ring: recorded as format and arguments,
     * rendered by vlog_dump. */
    log_all(VLOG_PRIO_DEBUG);
    text = check_slurp_path(argv[1]);
    check_text("the file output", text, 1);
    free(text);
    text = check_dump(NULL);
    check_text("the ring", text, 2);
    free(text);
    return 0;
}
