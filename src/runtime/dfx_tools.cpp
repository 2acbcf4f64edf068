// The DFX tools this library has, one line each (dfx.hpp make_tool).
#include "runtime/dfx.hpp"

namespace symmem::dfx {

std::unique_ptr<ToolHooks> make_race_tool(void* impl);  // dfx_race.cpp
std::unique_ptr<ToolHooks> make_stats_tool(void* impl, const Config& cfg);  // dfx_stats.cpp
std::unique_ptr<ToolHooks> make_check_tool(void* impl, const Config& cfg);  // dfx_check.cpp
std::unique_ptr<ToolHooks> make_trace_tool(void* impl, const Config& cfg);  // dfx_trace.cpp

std::unique_ptr<ToolHooks> make_tool(Tool bit, void* impl, const Config& cfg) {
  (void)impl;
  (void)cfg;
  switch (bit) {
    case kToolRace: return make_race_tool(impl);
    case kToolStats: return make_stats_tool(impl, cfg);
    case kToolCheck: return make_check_tool(impl, cfg);
    case kToolTrace: return make_trace_tool(impl, cfg);
    default: return nullptr;
  }
}

}  // namespace symmem::dfx
