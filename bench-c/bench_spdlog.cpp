// spdlog on the six NanoLog messages, in the modes vlog is compared with:
// filtered out, to a null sink, to its backtrace ring only, and to a file
// flushed after every line. Every mode checks its work through a counting sink.
#include <spdlog/async.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "harness.h"

namespace {

struct counting_sink : spdlog::sinks::base_sink<std::mutex> {
    long count = 0;

  protected:
    void sink_it_(const spdlog::details::log_msg &) override { count++; }
    void flush_() override {}
};

std::shared_ptr<counting_sink> counter;
std::shared_ptr<spdlog::logger> logger;
char file_path[64];

// The NanoLog messages in spdlog's format syntax.
#define SPD_M0 "Starting backup replica garbage collector thread"
#define SPD_M1 "Opened session with coordinator at {}", "basic+udp:host=192.168.1.140,port=12246"
#define SPD_M2 "Backup storage speeds (min): {} MB/s read", 181
#define SPD_M3 "buffer has consumed {} bytes of extra storage, current allocation: {} bytes", \
        1032024UL, 1016544UL
#define SPD_M4 "Using tombstone ratio balancer with ratio = {:.6f}", 0.4
#define SPD_M5 "Initialized InfUdDriver buffers: {} receive buffers ({} MB), {} transmit " \
    "buffers ({} MB), took {:.1f} ms", 50000UL, 97U, 50U, 0U, 26.2
#ifdef BENCH_LATENCY
#define SPD_CALL(...)                 \
    do {                              \
        logger->debug(__VA_ARGS__);   \
        bench_lap();                  \
    } while (0)
#else
#define SPD_CALL(...) logger->debug(__VA_ARGS__)
#endif

// The switch is outside the loops, so a call's instruction count is the call.
#define SPD_LOOP(M) for (long i = 0; i < n; i++) SPD_CALL(M)
void run(int msg, long n)
{
    switch (msg) {
    case 0: SPD_LOOP(SPD_M0); break;
    case 1: SPD_LOOP(SPD_M1); break;
    case 2: SPD_LOOP(SPD_M2); break;
    case 3: SPD_LOOP(SPD_M3); break;
    case 4: SPD_LOOP(SPD_M4); break;
    default: SPD_LOOP(SPD_M5); break;
    }
}

void make_logger(spdlog::level::level_enum level)
{
    counter = std::make_shared<counting_sink>();
    logger = std::make_shared<spdlog::logger>("bench", counter);
    logger->set_level(level);
}

void filtered_setup() { make_logger(spdlog::level::info); }
const char *filtered_check(long) { return counter->count == 0 ? nullptr : "a filtered message was sunk"; }

void null_setup() { make_logger(spdlog::level::debug); }
const char *null_check(long calls) { return counter->count == calls ? nullptr : "messages were lost"; }

const size_t backtrace_capacity = 4096;
void backtrace_setup()
{
    make_logger(spdlog::level::err);
    logger->enable_backtrace(backtrace_capacity);
}
// `calls` messages logged (by all threads together).
const char *backtrace_holds(long calls)
{
    if (counter->count != 0)
        return "a debug message reached the sink";
    logger->dump_backtrace();
    // The dump adds a first and a last line of its own.
    long held = calls < (long)backtrace_capacity ? calls : (long)backtrace_capacity;
    return counter->count == held + 2 ? nullptr : "the backtrace did not hold the messages";
}
const char *backtrace_check(long calls) { return backtrace_holds(calls); }

// The backtrace ring from 1, 2, 4 and 8 threads at once (a logger is
// thread-safe; the backtrace ring has a mutex of its own).
BENCH_THREADED(backtrace, run, 1)
BENCH_THREADED(backtrace, run, 2)
BENCH_THREADED(backtrace, run, 4)
BENCH_THREADED(backtrace, run, 8)
// Each thread made `calls` calls.
const char *backtrace_check_1(long calls) { return backtrace_holds(calls); }
const char *backtrace_check_2(long calls) { return backtrace_holds(2 * calls); }
const char *backtrace_check_4(long calls) { return backtrace_holds(4 * calls); }
const char *backtrace_check_8(long calls) { return backtrace_holds(8 * calls); }

void file_setup()
{
    snprintf(file_path, sizeof file_path, "/tmp/vlog-bench-spdlog-%d.log", (int)getpid());
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file_path, true);
    logger = std::make_shared<spdlog::logger>("bench", sink);
    logger->set_level(spdlog::level::debug);
    logger->flush_on(spdlog::level::debug); // each line reaches the file before the call returns
}
// spdlog's async logger into the same file sink: a queue of 2^18 messages
// (enough for the whole run) and one background thread, the arrangement
// vlog's writer thread is compared with.
void async_file_setup()
{
    snprintf(file_path, sizeof file_path, "/tmp/vlog-bench-spdlog-%d.log", (int)getpid());
    spdlog::init_thread_pool(1 << 18, 1);
    logger = spdlog::basic_logger_mt<spdlog::async_factory>("bench-async", file_path, true);
    logger->set_level(spdlog::level::debug);
}

const char *file_check(long calls)
{
    const char *wrong = nullptr;
    logger->flush();
    if (logger->name() == "bench-async")
        spdlog::shutdown(); // the thread pool writes what is queued
    if (bench_count_lines(file_path, nullptr) != calls)
        wrong = "the file did not get every line";
    unlink(file_path);
    return wrong;
}

const bench_mode modes[] = {
    {"spdlog-filtered", filtered_setup, run, filtered_check},
    {"spdlog-null", null_setup, run, null_check},
    {"spdlog-backtrace", backtrace_setup, run, backtrace_check},
    {"spdlog-file", file_setup, run, file_check},
    {"spdlog-async-file", async_file_setup, run, file_check},
    {"spdlog-threads-1", backtrace_setup, backtrace_run_1, backtrace_check_1},
    {"spdlog-threads-2", backtrace_setup, backtrace_run_2, backtrace_check_2},
    {"spdlog-threads-4", backtrace_setup, backtrace_run_4, backtrace_check_4},
    {"spdlog-threads-8", backtrace_setup, backtrace_run_8, backtrace_check_8},
    {nullptr, nullptr, nullptr, nullptr},
};

} // namespace

int main(int argc, char **argv)
{
    return bench_main(modes, argc, argv);
}
