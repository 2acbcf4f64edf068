// The one logger. Every line is prefixed "[pe N host:pid] level:" and goes to stderr in a
// single write(2), so lines from different PEs never interleave mid-line.
//
// The level comes from SYMMEM_LOG_LEVEL (error, warn, info, debug, trace; default warn).
// The PE shown is the one the process set last (the default instance's PE); code that
// knows its instance passes the PE explicitly with log_pe().
#pragma once

#include <cstdarg>
#include <string>
#include <vector>

namespace symmem {

enum class LogLevel { kError = 0, kWarn, kInfo, kDebug, kTrace };

LogLevel log_level();
void set_log_level(LogLevel level);
bool parse_log_level(const char* text, LogLevel* out);
// The PE printed by log() (-1 prints "pe ?").
void set_log_pe(int pe);
int log_pe_default();

void log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void log_pe(LogLevel level, int pe, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
void vlog_pe(LogLevel level, int pe, const char* fmt, va_list ap);

inline bool log_enabled(LogLevel level) { return level <= log_level(); }

// A set of PEs as every message writes it: "PE 3", "PEs 0-2, 5, 7" (sorted; runs of three
// or more as ranges; after 24 items "... (N in all)").
std::string pes_text(std::vector<int> pes);

}  // namespace symmem

#define SYMMEM_LOG(level, ...)                                                      \
  do {                                                                              \
    if (::symmem::log_enabled(::symmem::LogLevel::level)) ::symmem::log(::symmem::LogLevel::level, __VA_ARGS__); \
  } while (0)
