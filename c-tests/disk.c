/* Ring files and the disk: nothing another process does to the ring file,
 * and no limit of the disk or the process, turns vlog into a SIGBUS or a
 * SIGXFSZ.
 *
 *   disk truncated DIR [lazy]  the ring file is truncated (to 0, then part of
 *                              it) while mapped: logging, vlog_dump and a
 *                              crash dump go on, the ring moves to memory
 *                              with one warning. "lazy": no vlog_init, and
 *                              VLOG_DUMP=off (the first log call sets vlog
 *                              up).
 *   disk full DIR              DIR is a tmpfs too small for the ring: the
 *                              ring stays in memory, with one warning.
 *   disk fsize DIR             RLIMIT_FSIZE of 64 KiB: a file output past
 *                              it, a ring file that cannot be made, and
 *                              vlog_dump to a file past it raise no SIGXFSZ.
 */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

VLOG_INIT("test.disk");

static char dir[200];

static void crash_in_child(const char *expect)
{
    int status;
    pid_t pid = fork();
    char *text;

    CHECK(pid >= 0);
    if (pid == 0) {
        VLOG_ERROR("child about to abort");
        abort();
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
        fprintf(stderr, "child status %#x: not SIGABRT\n", status);
        exit(1);
    }
    text = check_slurp_path(check_path(dir, "dump"));
    CHECK(strstr(text, "vlog: fatal signal SIGABRT") != NULL);
    CHECK(strstr(text, expect) != NULL);
    free(text);
}

static int truncated(int lazy)
{
    int records, i;
    char *text;

    if (!lazy)
        CHECK(vlog_init() == 0);
    for (i = 0; i < 100; i++)
        VLOG_ERROR("before the truncation %d", i);
    /* logrotate's copytruncate, `: > ring`, a cleanup job. */
    CHECK(truncate(check_path(dir, "ring"), 0) == 0);
    for (i = 0; i < 100; i++)
        VLOG_ERROR("after the truncation %d", i);
    VLOG_DEBUG("deferred after the truncation %d", 7);
    text = check_dump(&records);
    CHECK(strstr(text, "after the truncation 99") != NULL);
    CHECK(strstr(text, "deferred after the truncation 7") != NULL);
    CHECK(check_count(text, "was truncated") == 1);
    free(text);
    if (!lazy)
        crash_in_child("after the truncation 99");

    /* A ring file made again, then cut in the middle. */
    CHECK(setenv("VLOG_BUFFER_FILE", check_path(dir, "ring2"), 1) == 0);
    vlog_shutdown();
    if (!lazy)
        CHECK(vlog_init() == 0);
    for (i = 0; i < 2000; i++)
        VLOG_ERROR("second file %d", i);
    CHECK(truncate(check_path(dir, "ring2"), 8192) == 0);
    for (i = 0; i < 10; i++)
        VLOG_ERROR("second file, after %d", i);
    text = check_dump(&records);
    CHECK(check_count(text, "was truncated") == 1);
    free(text);
    for (i = 10; i < 2000; i++)
        VLOG_ERROR("second file, after %d", i);
    text = check_dump(&records);
    CHECK(strstr(text, "second file, after 1999") != NULL);
    free(text);
    if (!lazy)
        crash_in_child("second file, after 1999");
    return 0;
}

static int full(void)
{
    int records, i;
    char *text;

    /* The ring file cannot get its blocks: the ring stays in memory, and
     * vlog_init says so. */
    CHECK(vlog_init() == 1);
    CHECK(strstr(vlog_last_error(), "keeping the ring in memory") != NULL);
    for (i = 0; i < 20000; i++)
        VLOG_ERROR("message %d with some padding to fill the ring faster", i);
    text = check_dump(&records);
    CHECK(strstr(text, "message 19999 with") != NULL);
    free(text);
    return 0;
}

static int fsize(void)
{
    struct rlimit limit = {64 * 1024, RLIM_INFINITY}, none = {RLIM_INFINITY, RLIM_INFINITY};
    vlog_stats stats;
    char spec[300];
    int fd, i, records;
    struct stat st;
    char *text;

    CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    /* A ring file larger than the limit (VLOG_BUFFER_SIZE=1M). */
    CHECK(vlog_init() == 0);
    snprintf(spec, sizeof spec, "3:file:%s", check_path(dir, "log"));
    CHECK(vlog_set_outputs(spec) == 0);
    for (i = 0; i < 3000; i++)
        VLOG_ERROR("line %d past the file size limit", i);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(stats.output_lines_lost > 0);
    CHECK(stat(check_path(dir, "log"), &st) == 0 && st.st_size <= 64 * 1024);
    CHECK(setrlimit(RLIMIT_FSIZE, &none) == 0); /* for check_dump's file */
    text = check_dump(&records);
    CHECK(strstr(text, "line 2999 past") != NULL);
    CHECK(check_count(text, "cannot write to") == 1);
    free(text);
    CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    /* vlog_dump into a file past the limit. */
    fd = open(check_path(dir, "dumped"), O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(vlog_dump(fd) == -1);
    close(fd);
    /* A crash dump to a file past the limit still dies by the crash. */
    crash_in_child("vlog: ring, oldest first");
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 3 && strlen(argv[2]) < 150);
    snprintf(dir, sizeof dir, "%s", argv[2]);
    if (strcmp(argv[1], "truncated") == 0)
        return truncated(argc == 4 && strcmp(argv[3], "lazy") == 0);
    if (strcmp(argv[1], "full") == 0)
        return full();
    if (strcmp(argv[1], "fsize") == 0)
        return fsize();
    return 2;
}
