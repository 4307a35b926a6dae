/* A daemon under seccomp: once vlog is set up (its outputs open, its writer
 * thread started, this thread's first call made), a filter that allows
 * exactly the system calls vlog(7) lists for a written line and for exit
 * is installed on every thread (SECCOMP_FILTER_FLAG_TSYNC), and any other
 * kills the process (SIGSYS). Then every kind of logging call, a reopen,
 * a flush, and exit(0); or, with `check`, a filter that also allows the
 * list for a failed check, and a failed check (which ends by SIGABRT).
 *
 *   seccomp DIR [check]  outputs DIR/a.log, DIR/b.json?sync and stderr
 *                  (errors); prints each kind's name before it (stdout)
 */
#include "check.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

VLOG_INIT("test.seccomp");

/* vlog(7), SYSTEM CALLS: a line written (by the caller or the writer
 * thread) to a file or stderr, and exit. */
static const int allowed[] = {
    SYS_write,       SYS_newfstatat, SYS_fstat,  SYS_prlimit64, SYS_rt_sigprocmask,
    SYS_futex,       SYS_clock_gettime,
    /* a pipe (stderr here): SIGPIPE held back around the write */
    SYS_rt_sigpending, SYS_rt_sigtimedwait,
    /* vlog_flush: the files' data made durable through a duplicate */
    SYS_fcntl,       SYS_fdatasync,
    /* a file opened again (vlog_reopen) */
    SYS_openat,      SYS_geteuid,
    /* exit: the writer thread stopped and joined, vlog's descriptors
     * closed, the process ended */
    SYS_close,       SYS_madvise,    SYS_munmap, SYS_exit,      SYS_exit_group,
};

/* vlog(7), SYSTEM CALLS: a failed check, beyond a written line: its wait
 * for the writer thread, abort(3) and the crash dump (to stderr here). */
static const int check_allowed[] = {
    SYS_clock_nanosleep, SYS_rt_sigaction, SYS_sigaltstack, SYS_alarm, SYS_getpid,
    SYS_gettid, SYS_tgkill,       SYS_writev,      SYS_pread64, SYS_lseek,
    SYS_ftruncate,   SYS_poll,
};

static void install(int check)
{
    struct sock_filter prog[128];
    struct sock_fprog fprog;
    size_t n = 0, count = sizeof allowed / sizeof allowed[0];
    size_t more = check ? sizeof check_allowed / sizeof check_allowed[0] : 0;

    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, arch));
    prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, nr));
    for (size_t i = 0; i < count; i++) {
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                 (unsigned)allowed[i], 0, 1);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    }
    for (size_t i = 0; i < more; i++) {
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                 (unsigned)check_allowed[i], 0, 1);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    }
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    fprog.len = (unsigned short)n;
    fprog.filter = prog;
    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
    CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) == 0);
}

static void say(const char *kind)
{
    printf("%s\n", kind);
    fflush(stdout);
}

/* A levels' watcher that logs: under the filter, what the configuration
 * call and its watchers make is the documented lists' (vlog(7)). */
static void told(int lowest, void *arg)
{
    (void)arg;
    VLOG_WARN("told the lowest level kept: %d", lowest);
}

int main(int argc, char **argv)
{
    char spec[600];
    static char big[8192];

    CHECK(argc == 2 || (argc == 3 && strcmp(argv[2], "check") == 0));
    memset(big, 'x', sizeof big - 1);
    snprintf(spec, sizeof spec, "1:file:%s/a.log 1:json:%s/b.json?sync 4:stderr", argv[1],
             argv[1]);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    CHECK(vlog_set_outputs(spec) == 0);
    /* Set up: this thread's first call, the writer thread's start. */
    VLOG_INFO("before the filter");
    CHECK(vlog_flush() == 0);
    say("set up"); /* (stdio's own first look at stdout) */
    install(argc == 3);
    CHECK(vlog_set_level(VLOG_PRIO_INFO) == 0);
    say("disabled");
    VLOG_DEBUG("a disabled call %d", 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    say("recorded");
    VLOG_DEBUG("a debug record %d", 1);
    say("info");
    VLOG_INFO("an info line %d", 2);
    say("error");
    VLOG_ERROR("an error line %d", 3);
    say("fields");
    VLOG_FIELDS(VLOG_PRIO_WARN, (VLOG_FIELD_STR("VM", "guest"), VLOG_FIELD_INT("N", 4)),
                "a warning with fields");
    say("hexdump");
    VLOG_HEXDUMP(VLOG_PRIO_WARN, big, 100, "a warning with %d bytes", 100);
    say("backtrace");
    VLOG_BACKTRACE(VLOG_PRIO_WARN, "a warning with its backtrace %d", 5);
    say("8k");
    VLOG_ERROR("an 8 KiB message %s", big);
    say("context");
    for (int i = 0; i < 30; i++)
        VLOG_DEBUG("context record %d", i);
    VLOG_ERROR("an error with its context");
    say("watch levels");
    CHECK(vlog_watch_levels(told, NULL) == 0);
    CHECK(vlog_set_filters("1:test 3:*") == 0);
    CHECK(vlog_set_filters("") == 0);
    say("reopen");
    CHECK(vlog_reopen() == 0);
    VLOG_ERROR("after the reopen");
    say("flush");
    CHECK(vlog_flush() == 0);
    if (argc == 3) {
        say("check");
        VLOG_CHECK(argc == 2, "a failed check under seccomp");
    }
    say("exit");
    exit(0);
}
