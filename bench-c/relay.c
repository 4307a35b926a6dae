/* The relay's cost per line: the 112-byte hclog debug line of go-plugin's
 * benchmark (LINE 0) and a mix of text and JSON lines (LINE 1), fed to a
 * relay directly and through a pipe: its source off, its level filtered
 * out, and recorded into the ring.
 *
 *     bench-c/relay MODE LINE N      (bench-c/relay.py runs every mode)
 *
 * Each mode checks the relay's counters: every line fed seen, and each one
 * skipped, filtered or recorded as the mode says. */
#include "harness.h"

#include <unistd.h>

#include <vlog.h>

static const char hclog[] =
    "{\"@level\":\"debug\",\"@timestamp\":\"2006-01-02T15:04:05.000000Z\",\"@message\":\"hello\","
    "\"extra\":\"hi\",\"numbers\":[1,2,3]}\n";

/* Four lines, fed as one chunk: the per-line figure divides by four. */
static const char mix[] =
    "{\"@level\":\"debug\",\"@message\":\"tick\",\"n\":1}\n"
    "[DEBUG] plugin: waiting for RPC address\n"
    "2026-11-30 13:45:12.345+0000: 4242: debug : qemu.monitor : qemuMonitorSend:123 : sent 12 bytes\n"
    "debug: connection from 192.0.2.7\n";

static vlog_relay *relay;
static long lines_per_call;

static void feed_run(int msg, long n)
{
    const char *text = msg == 0 ? hclog : mix;
    size_t len = msg == 0 ? sizeof hclog - 1 : sizeof mix - 1;

    lines_per_call = msg == 0 ? 1 : 4;
    for (long i = 0; i < n; i++)
        vlog_relay_feed(relay, text, len);
}

/* The same through a pipe: each line written into it and read back before it
 * is fed, as a daemon reads a child's stderr (what the pipe adds is the
 * difference from the direct mode). */
static int pipe_fds[2];
static void pipe_run(int msg, long n)
{
    const char *text = msg == 0 ? hclog : mix;
    size_t len = msg == 0 ? sizeof hclog - 1 : sizeof mix - 1;
    char buf[512];

    lines_per_call = msg == 0 ? 1 : 4;
    for (long i = 0; i < n; i++) {
        ssize_t got;
        if (write(pipe_fds[1], text, len) != (ssize_t)len ||
            (got = read(pipe_fds[0], buf, sizeof buf)) != (ssize_t)len) {
            fprintf(stderr, "pipe: %s\n", strerror(errno));
            exit(1);
        }
        vlog_relay_feed(relay, buf, (size_t)got);
    }
}

static void make_relay(void)
{
    relay = vlog_relay_new("child.bench", VLOG_PRIO_DEBUG);
    if (!relay) {
        fprintf(stderr, "vlog_relay_new: %s\n", vlog_last_error());
        exit(1);
    }
}

/* The source off (`off:child.bench`): each line costs finding its end. */
static void off_setup(void)
{
    if (vlog_set_filters("off:child.bench") != 0 || vlog_set_outputs("4:stderr") != 0)
        exit(1);
    make_relay();
}

/* The source at error, every line a debug line: each is dropped on its
 * level. */
static void filtered_setup(void)
{
    if (vlog_set_filters("4:child.bench") != 0 || vlog_set_outputs("4:stderr") != 0)
        exit(1);
    make_relay();
}

static void filtered_pipe_setup(void)
{
    if (pipe(pipe_fds) != 0)
        exit(1);
    filtered_setup();
}

static void recorded_pipe_setup(void);

static void recorded_setup(void)
{
    if (vlog_set_filters("1:child.bench") != 0 || vlog_set_outputs("4:stderr") != 0 ||
        vlog_set_buffer_size(4 << 20) != 0)
        exit(1);
    make_relay();
}

static void recorded_pipe_setup(void)
{
    if (pipe(pipe_fds) != 0)
        exit(1);
    recorded_setup();
}

static const char *all_filtered(long calls)
{
    vlog_relay_stats st;
    if (vlog_relay_get_stats(relay, &st) != 0)
        return "no stats";
    if (st.lines != (uint64_t)(calls * lines_per_call))
        return "not every line was seen";
    return st.filtered == st.lines && st.recorded == 0 ? NULL : "a line was recorded";
}

static const char *all_recorded(long calls)
{
    vlog_relay_stats st;
    if (vlog_relay_get_stats(relay, &st) != 0)
        return "no stats";
    if (st.lines != (uint64_t)(calls * lines_per_call))
        return "not every line was seen";
    return st.recorded == st.lines && st.malformed == 0 ? NULL : "a line was not recorded";
}

static const struct bench_mode modes[] = {
    {"relay-off", off_setup, feed_run, all_filtered},
    {"relay-filtered", filtered_setup, feed_run, all_filtered},
    {"relay-recorded", recorded_setup, feed_run, all_recorded},
    {"relay-filtered-pipe", filtered_pipe_setup, pipe_run, all_filtered},
    {"relay-recorded-pipe", recorded_pipe_setup, pipe_run, all_recorded},
    {NULL, NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
    return bench_main(modes, argc, argv);
}
