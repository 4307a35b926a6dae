/* The fluent output's cost per record: one request record with five fields
 * (two strings, three integers), the same the Go peer posts, recorded into
 * the ring and sent to a local receiver that drains (bench-c/drain, whose
 * port is in FLUENT_PORT); beside it the same record into the ring alone
 * and into the ring and a JSON output (/dev/null).
 *
 *     FLUENT_PORT=N bench-c/fluent MODE 0 N     (bench-c/fluent.py runs it)
 *
 * The fluent mode's calls end with vlog_flush, inside the time measured:
 * every record is on the socket before the clock stops. */
#include "harness.h"

#include <vlog.h>

VLOG_INIT("bench.fluent");

static void record_run(int msg, long n)
{
    (void)msg;
    for (long i = 0; i < n; i++)
        VLOG_FIELDS(VLOG_PRIO_INFO,
                    (VLOG_FIELD_STR("METHOD", "GET"), VLOG_FIELD_STR("PATH", "/index.html"),
                     VLOG_FIELD_INT("STATUS", 200), VLOG_FIELD_INT("BYTES", 5120),
                     VLOG_FIELD_INT("DURATION_US", 1234)),
                    "request");
}

static void fluent_run(int msg, long n)
{
    record_run(msg, n);
    if (vlog_flush() != 0) {
        fprintf(stderr, "vlog_flush: %s\n", vlog_last_error());
        exit(1);
    }
}

static void configure(const char *outputs)
{
    if (vlog_set_filters("1:bench.fluent") != 0 || vlog_set_buffer_size(4 << 20) != 0 ||
        vlog_set_outputs(outputs) != 0) {
        fprintf(stderr, "%s: %s\n", outputs, vlog_last_error());
        exit(1);
    }
}

static void ring_setup(void)
{
    configure("4:stderr");
}

static void json_setup(void)
{
    configure("1:json:/dev/null");
}

static void fluent_setup(void)
{
    char outputs[128];
    const char *port = getenv("FLUENT_PORT");

    if (!port) {
        fprintf(stderr, "FLUENT_PORT is not set (bench-c/fluent.py starts bench-c/drain)\n");
        exit(1);
    }
    snprintf(outputs, sizeof outputs, "1:fluent:bench@tcp://127.0.0.1:%s", port);
    configure(outputs);
}

static const char *all_kept(long calls)
{
    vlog_stats st;
    if (vlog_get_stats(&st) != 0)
        return "no stats";
    if (st.records != (uint64_t)calls)
        return "not every record was recorded";
    return st.output_lines_lost == 0 ? NULL : "an output lost records";
}

static const struct bench_mode modes[] = {
    {"vlog-ring", ring_setup, record_run, all_kept},
    {"vlog-ring-json", json_setup, record_run, all_kept},
    {"vlog-ring-fluent", fluent_setup, fluent_run, all_kept},
    {NULL, NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
    return bench_main(modes, argc, argv);
}
