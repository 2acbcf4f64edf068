// The DFX tools this library has, one line each, and the seam that hands them to the
// runtime below (runtime/dfx.hpp ToolSeam): filled once when the library loads.
#include "dfx/hang_watch.hpp"
#include "dfx/names.hpp"
#include "runtime/dfx.hpp"

namespace symmem::dfx {

std::unique_ptr<ToolHooks> make_race_tool(void* impl);  // dfx/race.cpp
std::unique_ptr<ToolHooks> make_stats_tool(void* impl, const Config& cfg);  // dfx/stats.cpp
std::unique_ptr<ToolHooks> make_check_tool(void* impl, const Config& cfg);  // dfx/check.cpp
std::unique_ptr<ToolHooks> make_trace_tool(void* impl, const Config& cfg);  // dfx/trace.cpp

namespace {

std::unique_ptr<ToolHooks> make_tool(Tool bit, void* impl, const Config& cfg) {
  switch (bit) {
    case kToolRace: return make_race_tool(impl);
    case kToolStats: return make_stats_tool(impl, cfg);
    case kToolCheck: return make_check_tool(impl, cfg);
    case kToolTrace: return make_trace_tool(impl, cfg);
    default: return nullptr;
  }
}

std::unique_ptr<Service> watch_hangs(void* impl, double hang_s) { return std::make_unique<HangWatch>(impl, hang_s); }

// libsymmem.so links every object of this layer, so this runs before any instance exists.
[[gnu::used]] const bool seam_filled = [] {
  tool_seam = ToolSeam{make_tool, static_name, watch_hangs};
  return true;
}();

}  // namespace
}  // namespace symmem::dfx
