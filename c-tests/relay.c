/* The relay: a child's output recorded line by line. Every line form, split
 * anywhere across calls; hostile lines (malformed JSON, non-string members,
 * NULs, bytes that are not UTF-8, a line far longer than a message); the
 * sticky panic rule; filters applied before a line is parsed; the tail; a
 * last partial line flushed at close; bad arguments; a signal handler that
 * feeds while its thread is feeding; and a child writing MEGABYTES as fast
 * as it can into a pipe while the relay's source is off (the child must
 * finish, never killed by EPIPE).
 *
 *   relay JSON_PATH MEGABYTES */
#include "check.h"

#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>

static const char hclog[] =
    "{\"@level\":\"debug\",\"@timestamp\":\"2006-01-02T15:04:05.000000Z\",\"@message\":\"hello\","
    "\"extra\":\"hi\",\"numbers\":[1,2,3]}\n";

static void feed(vlog_relay *r, const char *s)
{
    CHECK(vlog_relay_feed(r, s, strlen(s)) == 0);
}

/* File-scope, so a forked child that exits holding them still reaches them
 * (valgrind counts the memory of an unreachable one as lost). */
static vlog_relay *r, *q;
static vlog_relay *volatile in_handler;
static volatile sig_atomic_t handled;

static void feed_from_handler(int sig)
{
    (void)sig;
    if (in_handler)
        vlog_relay_feed(in_handler, "from the handler\n", 17);
    handled++;
}

int main(int argc, char **argv)
{
    char outputs[600], tail[64], *text, *json;
    vlog_relay_stats st;
    size_t i, n;

    CHECK(argc == 3);
    unlink(argv[1]);
    snprintf(outputs, sizeof outputs, "1:json:%s", argv[1]);
    CHECK(vlog_set_outputs(outputs) == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    CHECK(vlog_set_buffer_size(4 << 20) == 0);

    /* Bad arguments. */
    CHECK(vlog_relay_new(NULL, VLOG_PRIO_INFO) == NULL);
    CHECK_ERROR("NULL");
    CHECK(vlog_relay_new("", VLOG_PRIO_INFO) == NULL);
    CHECK(vlog_relay_new("two words", VLOG_PRIO_INFO) == NULL);
    CHECK_ERROR("no spaces");
    CHECK(vlog_relay_feed(NULL, "x", 1) == -1);
    CHECK_ERROR("NULL");
    CHECK(vlog_relay_tail(NULL, tail, sizeof tail) == 0);
    CHECK(vlog_relay_get_stats(NULL, &st) == -1);
    vlog_relay_close(NULL);

    r = vlog_relay_new("child.plugin", VLOG_PRIO_INFO);
    CHECK(r != NULL);
    CHECK(vlog_relay_feed(r, NULL, 1) == -1);
    CHECK(vlog_relay_feed(r, NULL, 0) == 0);

    /* The hclog line, one byte per call, then whole. */
    for (i = 0; i < sizeof hclog - 1; i++)
        CHECK(vlog_relay_feed(r, hclog + i, 1) == 0);
    feed(r, hclog);
    /* The other forms, several lines per call, one split mid-line. */
    feed(r, "[ERROR] disk failed\r\n[TRACE] tick\n<4>low on memory\n2026-11-30 13:45:12.345+0000: 42: "
            "warning : qemu.monitor : qemuMonitorSend:123 : sent");
    feed(r, " 3 bytes\n2026-11-30 13:45:12.345+0000: 7: error : virFileOpen:9 : cannot open\n"
            "just text\n\n");
    /* Hostile lines. */
    feed(r, "{\"@message\": 5, \"@level\": \"warn\"}\n{\"@level\":7,\"@message\":\"m\"}\n{broken\n");
    CHECK(vlog_relay_feed(r, "nul\0byte \xff\xfe end\n", 16) == 0);
    /* A line of 1,000,000 bytes: pieces of at most a message each. */
    {
        static char big[1000001];
        memset(big, 'x', sizeof big - 1);
        big[0] = '[', big[1] = 'W', big[2] = 'A', big[3] = 'R', big[4] = 'N', big[5] = ']';
        CHECK(vlog_relay_feed(r, big, sizeof big - 1) == 0);
        feed(r, "\n");
    }
    /* Go's last words: from here on every line is an error. */
    feed(r, "[DEBUG] before\npanic: runtime error: index out of range\n[DEBUG] after the panic\n");
    CHECK(vlog_relay_get_stats(r, &st) == 0);
    CHECK(st.lines == 17);
    CHECK(st.fragments == 123); /* ceil(1000000 / 8192) */
    CHECK(st.malformed == 3);
    CHECK(st.filtered == 0);
    CHECK(st.recorded == 16 + 123 - 1); /* the empty line is not a message */
    n = vlog_relay_tail(r, tail, sizeof tail);
    CHECK(n == sizeof tail);
    CHECK(memcmp(tail + n - 24, "[DEBUG] after the panic\n", 24) == 0);

    text = check_dump(NULL);
    CHECK(check_count(text, ": debug : child.plugin : ?:0 : hello [CHILD_LEVEL=debug "
                            "CHILD_TIME=2006-01-02T15:04:05.000000Z EXTRA=hi NUMBERS=\"[1,2,3]\"]") == 2);
    CHECK(strstr(text, ": error : child.plugin : ?:0 : disk failed [CHILD_LEVEL=ERROR]\n"));
    CHECK(strstr(text, ": debug : child.plugin : ?:0 : tick [CHILD_LEVEL=TRACE]\n"));
    CHECK(strstr(text, ": warning : child.plugin : ?:0 : low on memory [CHILD_SYSLOG_LEVEL=4]\n"));
    CHECK(strstr(text, ": warning : child.plugin : ?:0 : sent 3 bytes [CHILD_TIME=\"2026-11-30 "
                       "13:45:12.345+0000\" CHILD_TID=42 CHILD_SOURCE=qemu.monitor "
                       "CHILD_FUNC=qemuMonitorSend CHILD_LINE=123]\n"));
    CHECK(strstr(text, ": error : child.plugin : ?:0 : cannot open [CHILD_TIME="));
    CHECK(strstr(text, ": info : child.plugin : ?:0 : just text\n"));
    CHECK(strstr(text, ": warning : child.plugin : ?:0 : 5 [CHILD_LEVEL=warn]\n"));
    CHECK(strstr(text, ": info : child.plugin : ?:0 : m [CHILD_LEVEL=7]\n"));
    CHECK(strstr(text, ": info : child.plugin : ?:0 : {broken\n"));
    CHECK(strstr(text, ": info : child.plugin : ?:0 : nul\\x00byte \\xff\\xfe end\n"));
    CHECK(strstr(text, " [FRAGMENT=1]\n") && strstr(text, " [FRAGMENT=123]\n"));
    CHECK(strstr(text, ": warning : child.plugin : ?:0 : [WARN]xxxx"));
    CHECK(strstr(text, ": debug : child.plugin : ?:0 : before [CHILD_LEVEL=DEBUG]\n"));
    CHECK(strstr(text, ": error : child.plugin : ?:0 : panic: runtime error: index out of range\n"));
    CHECK(strstr(text, ": error : child.plugin : ?:0 : after the panic [CHILD_LEVEL=DEBUG]\n"));
    free(text);

    /* The JSON output keeps the fields' types. */
    CHECK(vlog_flush() == 0);
    json = check_slurp_path(argv[1]);
    CHECK(strstr(json, "\"message\":\"hello\",\"fields\":{\"CHILD_LEVEL\":\"debug\",\"CHILD_TIME\":"
                       "\"2006-01-02T15:04:05.000000Z\",\"EXTRA\":\"hi\",\"NUMBERS\":\"[1,2,3]\"}"));
    CHECK(strstr(json, "\"CHILD_TID\":42,"));
    free(json);

    /* A forked child leaves its parent's relay alone. */
    {
        pid_t pid = fork();
        int status;

        CHECK(pid >= 0);
        if (pid == 0) {
            CHECK(vlog_relay_feed(r, "[ERROR] from the child\n", 23) == -1);
            CHECK_ERROR("fork");
            CHECK(vlog_relay_get_stats(r, &st) == -1);
            vlog_relay_close(r);
            _exit(0);
        }
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }

    /* A last line without its newline is recorded at close. */
    feed(r, "[INFO] the last words, unfinished");
    vlog_relay_close(r);
    text = check_dump(NULL);
    CHECK(strstr(text, ": error : child.plugin : ?:0 : the last words, unfinished [CHILD_LEVEL=INFO]\n"));
    free(text);

    /* The daemon's own fields on every record of a relay; a child's field
     * of the same name does not speak for it. */
    q = vlog_relay_new("child.job", VLOG_PRIO_INFO);
    CHECK(q != NULL);
    CHECK(vlog_relay_field_set(NULL, "JOB_ID", "x") == -1);
    CHECK_ERROR("the relay is NULL");
    CHECK(vlog_relay_field_set(q, NULL, "x") == -1);
    CHECK(vlog_relay_field_set(q, "job id", "x") == -1);
    CHECK_ERROR("not a valid field name");
    CHECK(vlog_relay_field_set(q, "MESSAGE", "x") == -1);
    CHECK(vlog_relay_field_set(q, "JOB_ID", "job-7") == 0);
    CHECK(vlog_relay_field_set(q, "GONE", "soon") == 0);
    CHECK(vlog_relay_field_set(q, "GONE", NULL) == 0);
    feed(q, "job line one\n");
    feed(q, "{\"@level\":\"info\",\"@message\":\"job line two\",\"JOB_ID\":\"forged\"}\n");
    vlog_relay_close(q);
    text = check_dump(NULL);
    CHECK_HAS(text, ": info : child.job : ?:0 : job line one [JOB_ID=job-7]\n");
    CHECK_HAS(text, ": job line two [JOB_ID=job-7 CHILD_LEVEL=info]\n");
    CHECK(!strstr(text, "forged") && !strstr(text, "GONE"));
    free(text);

    /* Filters: decided from the level alone. */
    CHECK(vlog_set_filters("4:child.filtered") == 0);
    q = vlog_relay_new("child.filtered", VLOG_PRIO_INFO);
    CHECK(q != NULL);
    feed(q, hclog);
    feed(q, "{\"@level\":\"error\",\"@message\":\"kept\"}\n[INFO] dropped\n");
    CHECK(vlog_relay_get_stats(q, &st) == 0);
    CHECK(st.filtered == 2 && st.recorded == 1);

    /* A signal handler feeding the relay its thread is feeding: dropped and
     * counted, never a deadlock. */
    {
        static char chunk[1 << 16];
        struct itimerval every = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
        vlog_relay_stats before;
        struct sigaction sa;
        int rounds;

        for (i = 0; i + 7 < sizeof chunk; i += 8)
            memcpy(chunk + i, "[INFO] \n", 8);
        in_handler = q;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = feed_from_handler;
        CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
        CHECK(vlog_relay_get_stats(q, &before) == 0);
        CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
        for (rounds = 0; rounds < 100000; rounds++) {
            CHECK(vlog_relay_feed(q, chunk, sizeof chunk) == 0);
            CHECK(vlog_relay_get_stats(q, &st) == 0);
            if (st.dropped > before.dropped)
                break;
        }
        CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
        /* A tick may still be pending: it must find no relay to feed. */
        sa.sa_handler = SIG_IGN;
        CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
        in_handler = NULL;
        CHECK(st.dropped > before.dropped);
        CHECK(handled > 0);
    }
    vlog_relay_close(q);

    /* A child writing as fast as it can while its relay's source is off:
     * each line costs finding its end, and the child finishes. */
    {
        long megabytes = atol(argv[2]), lines;
        int fds[2], status;
        static char buf[1 << 16], flood[100000];
        pid_t pid;
        ssize_t got;

        CHECK(vlog_set_filters("off:child.flood") == 0);
        q = vlog_relay_new("child.flood", VLOG_PRIO_DEBUG);
        CHECK(q != NULL);
        CHECK(pipe(fds) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            for (i = 0; i + 100 <= sizeof flood; i += 100) {
                memset(flood + i, 'y', 99);
                flood[i + 99] = '\n';
            }
            for (lines = 0; lines < megabytes * 10; lines++)
                if (write(fds[1], flood, sizeof flood) != (ssize_t)sizeof flood)
                    _exit(3);
            _exit(0);
        }
        close(fds[1]);
        while ((got = read(fds[0], buf, sizeof buf)) > 0)
            CHECK(vlog_relay_feed(q, buf, (size_t)got) == 0);
        CHECK(got == 0);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(vlog_relay_get_stats(q, &st) == 0);
        CHECK(st.bytes == (uint64_t)megabytes * 1000000);
        CHECK(st.lines == (uint64_t)megabytes * 10000);
        CHECK(st.filtered == st.lines && st.recorded == 0);
        close(fds[0]);
        vlog_relay_close(q);
    }
    return 0;
}
