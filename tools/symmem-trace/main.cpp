// symmem-trace merge [-o FILE] [--keep] [--dir DIR] [JOB...]: merges the trace rings that
// SYMMEM_TRACE left in /dev/shm (jobs started by mpirun, srun, torchrun; symmem-run merges
// its own) into one Chrome/Perfetto JSON file per job, then removes them.
// symmem-trace list: the jobs that have rings.
// symmem-trace html IN.json [-o OUT.html] [--max-slices N]: draws a trace-event file as one
// self-contained HTML page (lanes, slices, arrows; zoom and pan) for any browser, offline.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dfx/trace.hpp"
#include "trace_html.hpp"

namespace {

const char* kUsage =
    "usage: symmem-trace merge [-o FILE] [--keep] [--dir DIR] [JOB_ID...]\n"
    "       symmem-trace list [--dir DIR]\n"
    "Merges the per-PE trace rings of SYMMEM_TRACE (in /dev/shm unless --dir) into one\n"
    "trace-event JSON file (chrome://tracing, ui.perfetto.dev) per job: FILE, or the path\n"
    "given in SYMMEM_TRACE. Without JOB_ID, every job that has rings. --keep leaves the rings.\n"
    "html draws a trace-event file as one self-contained HTML page (OUT: IN with .html): a\n"
    "lane per PE and thread, the slices, the arrows; wheel zooms, drag pans. Over N slices\n"
    "(default 50000) neighbours narrower than a pixel are drawn as one box.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace symmem::trace;
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  std::string out, dir = "/dev/shm";
  bool keep = false;
  symmem::trace::HtmlOptions html_opt;
  std::vector<std::string> jobs;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "-o" || a == "--out") && i + 1 < argc) out = argv[++i];
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--keep") keep = true;
    else if (a == "--max-slices" && i + 1 < argc) {
      char* end;
      const long long n = std::strtoll(argv[++i], &end, 10);
      if (*end || n < 1) {
        std::fprintf(stderr, "symmem-trace: --max-slices wants a positive number, not %s\n", argv[i]);
        return 2;
      }
      html_opt.max_slices = size_t(n);
    }
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "symmem-trace: unknown option %s\n%s", a.c_str(), kUsage);
      return 2;
    } else jobs.push_back(a);
  }
  if (cmd == "list") {
    for (const std::string& j : jobs_with_rings(dir)) std::printf("%s\n", j.c_str());
    return 0;
  }
  if (cmd == "html") {
    if (jobs.size() != 1) {
      std::fprintf(stderr, "symmem-trace: html wants one input file\n%s", kUsage);
      return 2;
    }
    HtmlResult r;
    std::string err;
    if (!write_trace_html(jobs[0], out, html_opt, &r, &err)) {
      std::fprintf(stderr, "symmem-trace: %s\n", err.c_str());
      return 1;
    }
    std::printf("symmem-trace: %zu lanes, %zu slices", r.lanes, r.slices);
    if (r.merged_boxes) std::printf(" (%zu drawn alone, %zu merged boxes)", r.drawn_slices, r.merged_boxes);
    std::printf(", %zu arrows written to %s\n", r.flows, r.out_path.c_str());
    return 0;
  }
  if (cmd != "merge") {
    std::fprintf(stderr, "symmem-trace: unknown command %s\n%s", cmd.c_str(), kUsage);
    return 2;
  }
  if (jobs.empty()) jobs = jobs_with_rings(dir);
  if (jobs.empty()) {
    std::fprintf(stderr, "symmem-trace: no trace rings in %s\n", dir.c_str());
    return 1;
  }
  if (!out.empty() && jobs.size() > 1) {
    std::fprintf(stderr, "symmem-trace: -o with %zu jobs; name one job\n", jobs.size());
    return 2;
  }
  int rc = 0;
  for (const std::string& j : jobs) {
    MergeResult r;
    std::string err;
    if (!merge_job(j, dir, out, keep, &r, &err)) {
      std::fprintf(stderr, "symmem-trace: job %s: %s\n", j.c_str(), err.c_str());
      rc = 1;
      continue;
    }
    for (const std::string& c : r.clocks) std::printf("symmem-trace: job %s: %s\n", j.c_str(), c.c_str());
    std::printf("symmem-trace: job %s: %d PEs (%zu events, %zu flows", j.c_str(), r.pes, r.events, r.flows);
    if (r.unfinished_pes) std::printf(", %d PEs did not finalize", r.unfinished_pes);
    std::printf(") written to %s\n", r.out_path.c_str());
  }
  return rc;
}
