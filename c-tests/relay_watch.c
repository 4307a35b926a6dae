/* A relay reading a child's pipe on vlog's own thread: every line of a
 * child that exits is recorded, its last unfinished line included; the
 * caller may close its descriptor at once (the thread reads its own
 * duplicate, which leaks into no exec'd child); a relay closed while its
 * thread reads a child that goes on writing returns, and no descriptor of
 * vlog's is left behind; bad descriptors and a second one are refused. */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

/* Descriptors a program exec'd now would inherit: open, not close-on-exec. */
static int inheritable(void)
{
    int n = 0;

    for (int fd = 0; fd < 1024; fd++) {
        int flags = fcntl(fd, F_GETFD);
        n += flags >= 0 && !(flags & FD_CLOEXEC);
    }
    return n;
}


/* A child writing `lines` lines into a pipe, then an unfinished one (or,
 * for -1, lines for ever, until the pipe is closed); returns the read end. */
static int child_writing(long lines, pid_t *pid)
{
    int fds[2];
    char line[64];

    CHECK(pipe(fds) == 0);
    *pid = fork();
    CHECK(*pid >= 0);
    if (*pid == 0) {
        signal(SIGPIPE, SIG_IGN); /* a closed pipe is EPIPE: the child's end */
        close(fds[0]);
        if (lines < 0) {
            /* As fast as a pipe takes it: 64 KiB a write, so the pipe is
             * never empty for long while a reader records line by line. */
            static char block[65536];
            for (size_t at = 0; at + 16 <= sizeof block; at += 16)
                memcpy(block + at, "[INFO] flooding\n", 16);
            while (write(fds[1], block, sizeof block) > 0)
                ;
            _exit(0);
        }
        for (long i = 0; i < lines; i++) {
            int n = snprintf(line, sizeof line, "[INFO] line %ld\n", i);
            if (write(fds[1], line, (size_t)n) != n)
                _exit(lines < 0 ? 0 : 3);
        }
        if (write(fds[1], "[ERROR] last words", 18) != 18)
            _exit(3);
        _exit(0);
    }
    close(fds[1]);
    return fds[0];
}

static void wait_for_lines(vlog_relay *r, uint64_t lines)
{
    vlog_relay_stats st;
    struct timespec tick = {0, 2000000};

    for (int i = 0; i < 10000; i++) {
        CHECK(vlog_relay_get_stats(r, &st) == 0);
        if (st.lines >= lines)
            return;
        nanosleep(&tick, NULL);
    }
    fprintf(stderr, "only %llu of %llu lines\n", (unsigned long long)st.lines,
            (unsigned long long)lines);
    exit(1);
}

/* File-scope, so a forked child that exits still reaches it (valgrind
 * counts the memory of an unreachable one as lost). */
static vlog_relay *r;

int main(void)
{
    vlog_relay_stats st;
    int fd, status, before;
    pid_t pid;
    char *text;

    CHECK(vlog_set_buffer_size(4 << 20) == 0);
    CHECK(vlog_set_filters("1:child") == 0);
    before = check_open_fds();

    /* Bad arguments. */
    r = vlog_relay_new("child.watched", VLOG_PRIO_INFO);
    CHECK(r != NULL);
    CHECK(vlog_relay_watch(NULL, 0) == -1);
    CHECK(vlog_relay_watch(r, -1) == -1);
    CHECK_ERROR("descriptor -1");
    CHECK(vlog_relay_watch(r, 1000) == -1);

    /* A child that writes 20,000 lines and exits: all of them, and its last
     * unfinished line, which the thread records at the end of the pipe. The
     * caller closes its descriptor at once. */
    fd = child_writing(20000, &pid);
    CHECK(vlog_relay_watch(r, fd) == 0);
    CHECK(vlog_relay_watch(r, fd) == -1);
    CHECK_ERROR("already");
    close(fd);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    wait_for_lines(r, 20001);
    CHECK(vlog_relay_get_stats(r, &st) == 0);
    CHECK(st.recorded == 20001);
    text = check_dump(NULL);
    CHECK(strstr(text, ": info : child.watched : ?:0 : line 19999 [CHILD_LEVEL=INFO]\n"));
    CHECK(strstr(text, ": error : child.watched : ?:0 : last words [CHILD_LEVEL=ERROR]\n"));
    free(text);
    vlog_relay_close(r);
    CHECK(check_open_fds() == before);

    /* Closed while its thread reads a child that goes on writing: the close
     * returns, the thread is gone, and so are vlog's descriptors. */
    r = vlog_relay_new("child.endless", VLOG_PRIO_INFO);
    CHECK(r != NULL);
    fd = child_writing(-1, &pid);
    CHECK(vlog_relay_watch(r, fd) == 0);
    wait_for_lines(r, 1000);
    vlog_relay_close(r);
    CHECK(check_open_fds() == before + 1); /* the caller's read end */
    close(fd);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* EPIPE, handled */

    /* The thread's descriptors are close-on-exec: a program exec'd meanwhile
     * inherits none of them. */
    r = vlog_relay_new("child.exec", VLOG_PRIO_INFO);
    CHECK(r != NULL);
    fd = child_writing(-1, &pid);
    {
        int inherited = inheritable();
        CHECK(vlog_relay_watch(r, fd) == 0);
        CHECK(check_open_fds() >= before + 3); /* the pipe, its duplicate, the waker */
        CHECK(inheritable() == inherited);
    }
    vlog_relay_close(r);
    close(fd);
    CHECK(waitpid(pid, &status, 0) == pid);
    puts("ok");
    return 0;
}
