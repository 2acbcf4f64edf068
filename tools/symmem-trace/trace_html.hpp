// The trace's offline viewer: `symmem-trace html IN.json` (docs/dfx.md, Timeline) turns a
// trace-event JSON file (what the merger writes, or any file of that subset) into one
// self-contained HTML page: an SVG timeline with a lane per process and thread, a slice
// per "X" event, an arrow per "s"/"f" flow pair, and a small inline script for zoom and pan.
// No network and no other file is needed to view it.
#pragma once

#include <cstddef>
#include <string>

namespace symmem::trace {

struct HtmlOptions {
  // Above this many slices, neighbouring slices narrower than a pixel of the whole-trace
  // view (then 2, 4, ... pixels) are drawn as one box each, so the page stays usable.
  size_t max_slices = 50000;
};

struct HtmlResult {
  std::string out_path;
  size_t lanes = 0, processes = 0;
  size_t slices = 0;        // "X" events
  size_t drawn_slices = 0;  // drawn one rectangle each
  size_t merged_boxes = 0;  // rectangles standing for several slices
  size_t flows = 0;         // complete s -> f pairs, one arrow each
};

// Reads `in`, writes `out` (empty: `in` with its extension replaced by .html). False and
// *err (one line, naming the file and, for malformed JSON, the line and column) when the
// input is not a trace-event file of the supported subset or the output cannot be written.
bool write_trace_html(const std::string& in, const std::string& out, const HtmlOptions& opt, HtmlResult* res,
                      std::string* err);

}  // namespace symmem::trace
