/* The relay's cost per line: the 112-byte hclog debug line of go-plugin's
 * benchmark (LINE 0) and a mix of text and JSON lines (LINE 1), fed to a
 * relay directly and through a pipe: its source off, its level filtered
 * out, and recorded into the ring.
 *
 *     bench-c/relay MODE LINE N      (bench-c/relay.py runs every mode)
 *
 * The -pipe modes write each line into a pipe and read it back before it is
 * fed: the cost of a daemon that reads every line as the child writes it.
 * The -stream modes are a child writing as fast as it can, its output
 * buffered (64 KiB writes, as stdio buffers a pipe) by a thread of the
 * benchmark, and the relay reading the pipe on its own thread
 * (vlog_relay_watch), many lines per read.
 *
 * Each mode checks the relay's counters: every line fed seen, and each one
 * skipped, filtered or recorded as the mode says. */
#include "harness.h"

#include <pthread.h>
#include <time.h>
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

/* The stream modes: the lines of the relays already closed (each run has a
 * relay of its own, as a relay reads one descriptor). */
static long streamed_lines;
static const char *stream_text;
static size_t stream_len;
static long stream_copies;

static void *stream_writer(void *arg)
{
    static char chunk[64 * 1024];
    size_t per = sizeof chunk / stream_len;
    long left = stream_copies;

    (void)arg;
    for (size_t i = 0; i < per; i++)
        memcpy(chunk + i * stream_len, stream_text, stream_len);
    while (left > 0) {
        long now = left < (long)per ? left : (long)per;
        size_t want = (size_t)now * stream_len, done = 0;
        while (done < want) {
            ssize_t w = write(pipe_fds[1], chunk + done, want - done);
            if (w < 0) {
                fprintf(stderr, "stream: %s\n", strerror(errno));
                exit(1);
            }
            done += (size_t)w;
        }
        left -= now;
    }
    close(pipe_fds[1]);
    return NULL;
}

static void make_relay(void);

static void stream_run(int msg, long n)
{
    pthread_t writer;
    vlog_relay_stats st;
    struct timespec pause = {0, 100 * 1000};

    stream_text = msg == 0 ? hclog : mix;
    stream_len = msg == 0 ? sizeof hclog - 1 : sizeof mix - 1;
    lines_per_call = msg == 0 ? 1 : 4;
    stream_copies = n;
    if (relay) {
        if (vlog_relay_get_stats(relay, &st) != 0)
            exit(1);
        streamed_lines += (long)st.lines;
        vlog_relay_close(relay);
    }
    make_relay();
    if (pipe(pipe_fds) != 0 || vlog_relay_watch(relay, pipe_fds[0]) != 0)
        exit(1);
    close(pipe_fds[0]);
    if (pthread_create(&writer, NULL, stream_writer, NULL) != 0)
        exit(1);
    pthread_join(writer, NULL);
    /* The relay's thread reads on to the end of file. */
    do {
        if (vlog_relay_get_stats(relay, &st) != 0)
            exit(1);
        if ((long)st.lines < n * lines_per_call)
            nanosleep(&pause, NULL);
    } while ((long)st.lines < n * lines_per_call);
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

static void off_pipe_setup(void)
{
    if (pipe(pipe_fds) != 0)
        exit(1);
    off_setup();
}

static void off_stream_setup(void)
{
    if (vlog_set_filters("off:child.bench") != 0 || vlog_set_outputs("4:stderr") != 0)
        exit(1);
}

static void filtered_stream_setup(void)
{
    if (vlog_set_filters("4:child.bench") != 0 || vlog_set_outputs("4:stderr") != 0)
        exit(1);
}

static void recorded_stream_setup(void)
{
    if (vlog_set_filters("1:child.bench") != 0 || vlog_set_outputs("4:stderr") != 0 ||
        vlog_set_buffer_size(4 << 20) != 0)
        exit(1);
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

/* The stream modes' counts, over every relay of the run. */
static const char *stream_counted(long calls, int recorded)
{
    vlog_relay_stats st;
    if (vlog_relay_get_stats(relay, &st) != 0)
        return "no stats";
    if (streamed_lines + (long)st.lines != calls * lines_per_call)
        return "not every line was seen";
    if (recorded)
        return st.recorded == st.lines && st.malformed == 0 ? NULL : "a line was not recorded";
    return st.filtered == st.lines && st.recorded == 0 ? NULL : "a line was recorded";
}

static const char *stream_filtered(long calls)
{
    return stream_counted(calls, 0);
}

static const char *stream_recorded(long calls)
{
    return stream_counted(calls, 1);
}

static const struct bench_mode modes[] = {
    {"relay-off", off_setup, feed_run, all_filtered},
    {"relay-filtered", filtered_setup, feed_run, all_filtered},
    {"relay-recorded", recorded_setup, feed_run, all_recorded},
    {"relay-off-pipe", off_pipe_setup, pipe_run, all_filtered},
    {"relay-filtered-pipe", filtered_pipe_setup, pipe_run, all_filtered},
    {"relay-recorded-pipe", recorded_pipe_setup, pipe_run, all_recorded},
    {"relay-off-stream", off_stream_setup, stream_run, stream_filtered},
    {"relay-filtered-stream", filtered_stream_setup, stream_run, stream_filtered},
    {"relay-recorded-stream", recorded_stream_setup, stream_run, stream_recorded},
    {NULL, NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
    return bench_main(modes, argc, argv);
}
