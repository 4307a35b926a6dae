/* Every descriptor vlog keeps open (file output, a crash dump file that
 * holds earlier dumps, the ring file while it is set up) is close-on-exec, so a daemon
 * that execs helpers does not hand them its logs; every file vlog creates is
 * 0600. The driver sets VLOG_OUTPUTS, VLOG_DUMP and VLOG_BUFFER_FILE to files
 * in DIR. */
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

VLOG_INIT("test.cloexec");

static void check_mode(const char *dir, const char *name)
{
    char path[600];
    struct stat st;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) != 0 || (st.st_mode & 0777) != 0600) {
        fprintf(stderr, "%s: mode %o, want 600\n", path, st.st_mode & 0777);
        exit(1);
    }
}

/* Marks in `open` the descriptors open now (below 4096: vlog keeps its
 * own at up to 1024 and above). */
static void open_fds(char *open)
{
    DIR *fds = opendir("/proc/self/fd");
    struct dirent *e;

    CHECK(fds != NULL);
    while ((e = readdir(fds)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd != dirfd(fds) && fd < 4096)
            open[fd] = 1;
    }
    closedir(fds);
}

int main(int argc, char **argv)
{
    static char before[4096], after[4096];
    int checked = 0;

    CHECK(argc == 2);
    /* Only what vlog opens: the test runner may pass descriptors of its own.
     * vlog set itself up before main (VLOG_* is set): shut down first. */
    vlog_shutdown();
    open_fds(before);
    CHECK(vlog_init() == 0);
    VLOG_ERROR("one message, so every output is in use");
    open_fds(after);
    for (int fd = 3; fd < 4096; fd++) {
        if (!after[fd] || before[fd])
            continue;
        if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC)) {
            char link[64], target[600] = "?";
            ssize_t n;
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            n = readlink(link, target, sizeof target - 1);
            target[n < 0 ? 0 : n] = '\0';
            fprintf(stderr, "fd %d (%s) is not close-on-exec\n", fd, target);
            exit(1);
        }
        checked++;
    }
    CHECK(checked >= 1); /* the output */
    check_mode(argv[1], "out.log");
    check_mode(argv[1], "vlog.ring");
    /* The dump file and its ring image are made at a crash, not before
     * (test dump_file checks the mode of what a crash makes). */
    for (int i = 0; i < 2; i++) {
        char path[600];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", argv[1], i == 0 ? "crash.txt" : "crash.txt.ring");
        CHECK(stat(path, &st) == -1 && errno == ENOENT);
    }
    return 0;
}
