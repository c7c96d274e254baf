// A per-process timeline of where the time goes, written as Chrome trace-event JSON (what
// Perfetto, chrome://tracing and PyTorch's profiler read): spans on each thread's track,
// and asynchronous spans for requests in flight. Off by default, and then a span costs one
// relaxed load and no clock read.
#pragma once

#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distgraph/core/durable_file.hpp"
#include "distgraph/core/error.hpp"

namespace distgraph {

/// What a process traces and where it writes it (`start_trace`).
struct TraceOptions {
  std::string file;          ///< the trace written at exit (or by write_trace); empty: off
  std::string process_name;  ///< the process's name in the timeline ("trainer 0")
};

namespace trace {

/// Nanoseconds of the monotonic clock, shared by every process of a machine, so their
/// traces line up when merged.
inline std::uint64_t now_ns() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // steady_clock's clock, without <chrono>
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(t.tv_nsec);
}

/// One recorded event: a complete span ('X'), an async begin or end ('b', 'e'), or a
/// thread-name record ('M').
struct Event {
  char ph = 'X';
  std::string name;
  const char* cat = "";
  std::uint64_t ts = 0, dur = 0, id = 0;
  std::int32_t tid = 0;
  std::uint8_t nargs = 0;
  std::pair<const char*, std::int64_t> args[3]{};
};

namespace detail {

/// A thread's events, behind its own lock (taken by the writer only at the end).
struct ThreadEvents {
  std::mutex mutex;
  std::int32_t tid = 0;
  std::vector<Event> events;
};

struct Registry {
  std::atomic<bool> enabled{false};
  std::atomic<std::uint64_t> next_id{1};
  std::mutex mutex;
  TraceOptions options;
  bool written = false;
  std::vector<std::shared_ptr<ThreadEvents>> threads;
};

/// Never destroyed: threads and the exit hook may outlive static destruction.
inline Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

inline ThreadEvents& this_thread_events() {
  thread_local std::shared_ptr<ThreadEvents> mine = [] {
    auto t = std::make_shared<ThreadEvents>();
    t->tid = static_cast<std::int32_t>(::syscall(SYS_gettid));
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.threads.push_back(t);
    return t;
  }();
  return *mine;
}

inline void record(Event e) {
  ThreadEvents& t = this_thread_events();
  e.tid = t.tid;
  std::lock_guard lock(t.mutex);
  t.events.push_back(std::move(e));
}

/// `s` as a JSON string literal.
inline std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// Microseconds with nanosecond digits, as the format's "ts" and "dur" expect.
inline std::string micros(std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return buf;
}

// Appends only: GCC 12 misreports "literal" + temporary strings (-Wrestrict).
inline std::string event_json(const Event& e, int pid) {
  std::string s = "{\"ph\":\"";
  const auto add = [&s](std::initializer_list<std::string_view> parts) {
    for (const auto p : parts) s.append(p);
  };
  s += e.ph;
  add({"\",\"name\":", quoted(e.name), ",\"pid\":", std::to_string(pid),
       ",\"tid\":", std::to_string(e.tid)});
  if (e.ph == 'M') {
    add({",\"args\":{\"name\":", quoted(e.cat), "}}"});
    return s;
  }
  add({",\"cat\":", quoted(e.cat), ",\"ts\":", micros(e.ts)});
  if (e.ph == 'X') add({",\"dur\":", micros(e.dur)});
  if (e.ph == 'b' || e.ph == 'e') add({",\"id\":", std::to_string(e.id)});
  if (e.nargs > 0) {
    s.append(",\"args\":{");
    for (std::uint8_t i = 0; i < e.nargs; ++i)
      add({i ? "," : "", quoted(e.args[i].first), ":", std::to_string(e.args[i].second)});
    s.append("}");
  }
  s.append("}");
  return s;
}

}  // namespace detail

/// Whether this process is tracing. A relaxed load: the whole cost of a span when off.
inline bool enabled() noexcept {
  return detail::registry().enabled.load(std::memory_order_relaxed);
}

/// A span of the calling thread, from construction to destruction (nested spans nest on
/// the thread's track). Up to three integer arguments (`arg`). Nothing when tracing is off.
class Span {
 public:
  explicit Span(const char* name, const char* cat = "train") {
    if (enabled()) begin(name, cat);
  }
  Span(std::string name, const char* cat) {
    if (enabled()) begin(std::move(name), cat);
  }
  ~Span() { end(); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  /// Adds `key` = `value` to the span's arguments (keys: string literals; at most 3).
  Span& arg(const char* key, std::int64_t value) {
    if (on_ && e_.nargs < 3) e_.args[e_.nargs++] = {key, value};
    return *this;
  }
  /// Ends the span now instead of at destruction.
  void end() {
    if (!on_) return;
    e_.dur = now_ns() - e_.ts;
    detail::record(std::move(e_));
    on_ = false;
  }

 private:
  void begin(std::string name, const char* cat) {
    on_ = true;
    e_.name = std::move(name);
    e_.cat = cat;
    e_.ts = now_ns();
  }

  bool on_ = false;
  Event e_;
};

/// An asynchronous span from `start_ns` to now (a request in flight: several overlap on
/// one thread, so they get tracks of their own in the viewer). Nothing when tracing is off.
inline void async_span(std::string name, const char* cat, std::uint64_t start_ns,
                       std::initializer_list<std::pair<const char*, std::int64_t>> args = {}) {
  if (!enabled()) return;
  const std::uint64_t id = detail::registry().next_id.fetch_add(1, std::memory_order_relaxed);
  Event b{.ph = 'b', .name = name, .cat = cat, .ts = start_ns, .id = id};
  for (const auto& a : args)
    if (b.nargs < 3) b.args[b.nargs++] = a;
  Event e{.ph = 'e', .name = std::move(name), .cat = cat, .ts = now_ns(), .id = id};
  detail::record(std::move(b));
  detail::record(std::move(e));
}

/// Names the calling thread: its OS name "dg-" + name (what `top -H`, perf and gdb show;
/// cut to Linux's 15 characters; on a process's main thread this is also the process's
/// name in `ps`; threads it starts later inherit it) and, when tracing, its track
/// ("prefetch", "socket").
inline void name_thread(const char* name) {
  char os_name[16] = "dg-";
  std::snprintf(os_name + 3, sizeof os_name - 3, "%s", name);
  ::pthread_setname_np(::pthread_self(), os_name);
  if (!enabled()) return;
  detail::record(Event{.ph = 'M', .name = "thread_name", .cat = name});
}

/// The events recorded so far as trace-event JSON: `{"traceEvents":[...]}`, one event a line.
inline std::string to_json() {
  detail::Registry& r = detail::registry();
  std::vector<std::shared_ptr<detail::ThreadEvents>> threads;
  std::string name;
  {
    std::lock_guard lock(r.mutex);
    threads = r.threads;
    name = r.options.process_name;
  }
  const int pid = static_cast<int>(::getpid());
  std::string head = "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";
  head.append(std::to_string(pid)).append(",\"tid\":0,\"args\":{\"name\":");
  head.append(detail::quoted(name)).append("}}");
  std::vector<std::string> lines{std::move(head)};
  for (const auto& t : threads) {
    std::lock_guard lock(t->mutex);
    for (const Event& e : t->events) lines.push_back(detail::event_json(e, pid));
  }
  std::string s = "{\"traceEvents\":[\n";
  for (std::size_t i = 0; i < lines.size(); ++i)
    s += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
  return s + "]}\n";
}

namespace detail {

/// Writes `text` to `file` under a temporary name, then renames it: a reader never sees half
/// a file. (stdio, not <fstream>/<filesystem>: this header stays cheap to include.)
inline void publish(const std::string& file, const std::string& text) {
  const std::string tmp = file + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr && errno == ENOENT) {
    // The folder of a launch's parts exists only on the launcher's computer: make it here.
    if (const auto slash = file.rfind('/'); slash != std::string::npos && slash > 0)
      ::mkdir(file.substr(0, slash).c_str(), 0755);
    f = std::fopen(tmp.c_str(), "wb");
  }
  if (f == nullptr) throw IoError(tmp, "cannot write the trace");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw IoError(tmp, "cannot write the trace");
  publish_file(tmp, file);
}

/// The lines of `path`, without their line ends.
inline std::vector<std::string> read_lines(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw IoError(path, "cannot read the trace");
  std::vector<std::string> lines(1);
  char buf[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    for (std::size_t i = 0; i < n; ++i) {
      if (buf[i] == '\n')
        lines.emplace_back();
      else
        lines.back() += buf[i];
    }
  std::fclose(f);
  if (lines.back().empty()) lines.pop_back();
  return lines;
}

}  // namespace detail

/// Writes the trace to the started file now (once; later calls do nothing).
inline void write_trace() {
  detail::Registry& r = detail::registry();
  std::string file;
  {
    std::lock_guard lock(r.mutex);
    if (r.written || r.options.file.empty()) return;
    r.written = true;
    file = r.options.file;
  }
  detail::publish(file, to_json());
}

/// Starts tracing this process into `o.file`, written by write_trace() or at exit.
inline void start_trace(const TraceOptions& o) {
  if (o.file.empty()) return;
  detail::Registry& r = detail::registry();
  {
    std::lock_guard lock(r.mutex);
    r.options = o;
    r.written = false;
  }
  static const bool hooked = [] {
    std::atexit([] {
      try {
        write_trace();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "distgraph: %s\n", e.what());
      }
    });
    return true;
  }();
  (void)hooked;
  r.enabled.store(true, std::memory_order_relaxed);
}

/// Starts tracing when the environment asks for it (DISTGRAPH_TRACE=FILE, and
/// DISTGRAPH_TRACE_NAME, else `fallback_name`, as the process's name): how `distgraph
/// launch --trace DIR` reaches every server and trainer it starts.
inline void start_trace_from_environment(const std::string& fallback_name) {
  const char* file = std::getenv("DISTGRAPH_TRACE");
  if (file == nullptr || *file == '\0') return;
  const char* name = std::getenv("DISTGRAPH_TRACE_NAME");
  start_trace({.file = file, .process_name = name != nullptr && *name ? name : fallback_name});
}

/// Merges the trace files `parts` (each written by write_trace) into one trace at `out`,
/// so every process of a job is one timeline. Throws FormatError for a file that is not one.
inline void merge_traces(const std::vector<std::string>& parts, const std::string& out) {
  std::string text = "{\"traceEvents\":[\n";
  bool first = true;
  for (const auto& p : parts) {
    const auto lines = detail::read_lines(p);
    if (lines.empty() || lines.front() != "{\"traceEvents\":[")
      throw FormatError(p, "not a distgraph trace (first line)");
    if (lines.size() < 2 || lines.back() != "]}")
      throw FormatError(p, "truncated trace (no closing line)");
    for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
      std::string_view e = lines[i];
      if (!e.empty() && e.back() == ',') e.remove_suffix(1);
      if (e.empty()) continue;
      if (!first) text.append(",\n");
      text.append(e);
      first = false;
    }
  }
  text.append("\n]}\n");
  detail::publish(out, text);
}

}  // namespace trace

using trace::start_trace;
using trace::write_trace;

}  // namespace distgraph
