/* File outputs: created 0600, relative paths made absolute, the libvirt line
 * with the source, one line per message with control bytes escaped, each
 * output with its own priority, and reopen after rotation. */
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <regex.h>
#include <sys/stat.h>

/* The flags of the descriptor this process has open on `path`, or -1. */
static int fd_flags_for(const char *path)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *entry;
    int flags = -1;

    CHECK(dir != NULL);
    while ((entry = readdir(dir)) != NULL) {
        char link[300], target[512];
        ssize_t n;
        snprintf(link, sizeof link, "/proc/self/fd/%s", entry->d_name);
        n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, path) == 0)
            flags = fcntl(atoi(entry->d_name), F_GETFD);
    }
    closedir(dir);
    return flags;
}

VLOG_INIT("test.outputs");

int main(void)
{
    char dir[] = "/tmp/vlog-outputs-XXXXXX";
    char spec[512], path[300], rotated[300];
    struct stat st;
    regex_t re;
    char *text;

    CHECK(mkdtemp(dir) != NULL);
    CHECK(chdir(dir) == 0);
    snprintf(path, sizeof path, "%s/all.log", dir);
    snprintf(rotated, sizeof rotated, "%s/all.log.1", dir);

    /* Relative path; warnings-only file beside a debug file. */
    snprintf(spec, sizeof spec, "1:file:all.log 3:file:%s/warn.log", dir);
    CHECK(vlog_set_outputs(spec) == 0);
    CHECK(vlog_set_filters("1:test.outputs") == 0);
    CHECK(chdir("/") == 0); /* the path was made absolute when parsed */

    VLOG_DEBUG("line one\nline two\ttab \x1b[31mred");
    VLOG_ERROR("an error");

    CHECK(stat(path, &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    /* Close-on-exec: a daemon's children do not inherit its log files. */
    CHECK(fd_flags_for(path) >= 0 && (fd_flags_for(path) & FD_CLOEXEC));
    text = check_slurp_path(path);
    CHECK(check_count(text, "\n") == 2);
    CHECK(regcomp(&re,
                  "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}\\+0000: "
                  "[0-9]+: debug : test\\.outputs : main:[0-9]+ : "
                  "line one\\\\nline two\\\\ttab \\\\x1b\\[31mred\n",
                  REG_EXTENDED | REG_NEWLINE) == 0);
    CHECK(regexec(&re, text, 0, NULL, 0) == 0);
    regfree(&re);
    CHECK(strstr(text, ": error : test.outputs : main:") != NULL);
    free(text);

    snprintf(spec, sizeof spec, "%s/warn.log", dir);
    text = check_slurp_path(spec);
    /* The error, with the debug line before it as its context. */
    CHECK(check_count(text, "\n") == 2);
    CHECK(strstr(text, ": debug (context) : test.outputs : main:") != NULL);
    CHECK(strstr(text, " : an error\n") > strstr(text, ": debug (context) : "));
    free(text);

    /* Rotation: move the file away, reopen, and the next line goes to a new
     * file at the old path. The line written between the rename and the
     * reopen goes to the old file, or, when vlog's once-a-second look at
     * the path falls just then (a slow run: valgrind), to the new one: in
     * one of them, once. */
    CHECK(rename(path, rotated) == 0);
    VLOG_INFO("before reopen");
    CHECK(vlog_reopen() == 0);
    VLOG_INFO("after reopen");
    CHECK(vlog_flush() == 0);
    {
        char *old_file = check_slurp_path(rotated), *new_file = check_slurp_path(path);
        CHECK(check_count(old_file, "before reopen") + check_count(new_file, "before reopen") == 1);
        CHECK(strstr(old_file, "after reopen") == NULL);
        CHECK(check_count(new_file, "after reopen") == 1);
        free(old_file);
        free(new_file);
    }

    /* A reopen that fails says why and keeps logging to the old file. */
    {
        char moved[300];
        snprintf(moved, sizeof moved, "%s.moved", dir);
        CHECK(rename(dir, moved) == 0);
        CHECK(vlog_reopen() == -1);
        CHECK_ERROR(path);
        VLOG_INFO("after failed reopen");
        CHECK(vlog_flush() == 0);
        CHECK(rename(moved, dir) == 0);
        text = check_slurp_path(path);
        CHECK(strstr(text, "after failed reopen") != NULL);
        free(text);
    }
    CHECK(vlog_flush() == 0);

    /* The same destination twice: the later one wins, priority included. */
    snprintf(spec, sizeof spec, "1:file:%s/dup.log 4:file:%s/dup.log", dir, dir);
    CHECK(vlog_set_outputs(spec) == 0);
    VLOG_WARN("dropped by the later duplicate");
    VLOG_ERROR("kept by the later duplicate");
    snprintf(spec, sizeof spec, "%s/dup.log", dir);
    text = check_slurp_path(spec);
    /* One line, the error, after its context (the records this new output
     * did not print, the warning among them, marked as such). */
    CHECK(check_count(text, "\n") == check_count(text, " (context) : ") + 1);
    CHECK(strstr(text, " : kept by the later duplicate\n") == text + strlen(text) -
                                                                  strlen(" : kept by the later duplicate\n"));
    CHECK(strstr(text, ": warning (context) : test.outputs : main:") != NULL);
    CHECK(strstr(text, ": warning : ") == NULL);
    free(text);

    /* Appending, never truncating: a new output on the same file keeps lines. */
    snprintf(spec, sizeof spec, "1:file:%s", path);
    CHECK(vlog_set_outputs(spec) == 0);
    VLOG_INFO("appended");
    CHECK(vlog_flush() == 0);
    text = check_slurp_path(path);
    CHECK(strstr(text, "after reopen") != NULL && strstr(text, "appended") != NULL);
    free(text);
    puts("ok");
    return 0;
}
