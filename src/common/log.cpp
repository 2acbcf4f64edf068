#include "common/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace symmem {
namespace {

LogLevel initial_level() {
  LogLevel l = LogLevel::kWarn;
  if (const char* e = std::getenv("SYMMEM_LOG_LEVEL")) parse_log_level(e, &l);
  return l;
}

std::atomic<int>& level_store() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

std::atomic<int> g_pe{-1};

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
    case LogLevel::kTrace: return "trace";
  }
  return "?";
}

}  // namespace

LogLevel log_level() { return static_cast<LogLevel>(level_store().load(std::memory_order_relaxed)); }
void set_log_level(LogLevel level) { level_store().store(static_cast<int>(level)); }

bool parse_log_level(const char* text, LogLevel* out) {
  static const char* names[] = {"error", "warn", "info", "debug", "trace"};
  for (int i = 0; i < 5; ++i) {
    if (strcasecmp(text, names[i]) == 0) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

void set_log_pe(int pe) { g_pe.store(pe, std::memory_order_relaxed); }
int log_pe_default() { return g_pe.load(std::memory_order_relaxed); }

void vlog_pe(LogLevel level, int pe, const char* fmt, va_list ap) {
  // Once, thread-safely: the store thread and a PE's threads may log their first lines at
  // the same time.
  static const struct Host {
    char name[64] = {0};
    Host() {
      if (gethostname(name, sizeof(name) - 1) != 0) std::strcpy(name, "?");
    }
  } host_once;
  const char* host = host_once.name;
  char buf[2048];
  int n;
  if (pe >= 0)
    n = std::snprintf(buf, sizeof(buf), "[pe %d %s:%d] symmem %s: ", pe, host, (int)getpid(), level_name(level));
  else
    n = std::snprintf(buf, sizeof(buf), "[pe ? %s:%d] symmem %s: ", host, (int)getpid(), level_name(level));
  if (n < 0) return;
  int m = std::vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
  if (m < 0) return;
  size_t len = std::strlen(buf);
  if (len > sizeof(buf) - 2) len = sizeof(buf) - 2;
  buf[len++] = '\n';
  ssize_t r = write(STDERR_FILENO, buf, len);
  (void)r;
}

void log_pe(LogLevel level, int pe, const char* fmt, ...) {
  if (!log_enabled(level)) return;
  va_list ap;
  va_start(ap, fmt);
  vlog_pe(level, pe, fmt, ap);
  va_end(ap);
}

void log(LogLevel level, const char* fmt, ...) {
  if (!log_enabled(level)) return;
  va_list ap;
  va_start(ap, fmt);
  vlog_pe(level, log_pe_default(), fmt, ap);
  va_end(ap);
}

std::string pes_text(std::vector<int> pes) {
  constexpr size_t kShow = 24;
  std::sort(pes.begin(), pes.end());
  std::string out = pes.size() == 1 ? "PE " : "PEs ";
  size_t items = 0;
  for (size_t i = 0; i < pes.size();) {
    size_t j = i;
    while (j + 1 < pes.size() && pes[j + 1] == pes[j] + 1) ++j;
    if (items == kShow) {
      out += ", ... (" + std::to_string(pes.size()) + " in all)";
      break;
    }
    if (items) out += ", ";
    if (j - i >= 2) {
      out += std::to_string(pes[i]) + "-" + std::to_string(pes[j]);
      i = j + 1;
    } else {
      out += std::to_string(pes[i]);
      ++i;
    }
    ++items;
  }
  return out;
}

}  // namespace symmem
