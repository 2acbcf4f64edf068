// The PEs' own hang deadline (SYMMEM_HANG_TIMEOUT) when no symmem-run watches the job
// (mpirun, srun, torchrun, a unique id): a thread of the lowest PE of each node looks at
// its node's status pages a few times a second and, once every PE of the node has slept in
// a wait with nothing moving for the deadline, prints the hang report (dfx/hang.hpp) for
// its node and, when its node holds every PE of the job (verdict DEADLOCK), ends the job
// with exit code 124. Across nodes the watches agree through the job's store: a blocked
// node publishes its summary (hang/node/<rank>: a signature of its pages and one line per
// PE, Report::pe_lines); when every node has, and nothing moved over the look, PE 0 prints
// the job's report with the other nodes' PEs from their summaries and ends the job (124).
// A blocked node whose job goes on prints its own BLOCKED report once, a few seconds later.
// Under symmem-run the launcher does all this for the whole job.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/dfx.hpp"

namespace symmem {

class HangWatch : public dfx::Service {
 public:
  // `impl` is the Runtime::Impl whose node is watched; it outlives this object.
  HangWatch(void* impl, double hang_s);
  ~HangWatch() override;  // stops the thread
  HangWatch(const HangWatch&) = delete;
  HangWatch& operator=(const HangWatch&) = delete;

 private:
  void run();
  void* impl_;
  double hang_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace symmem
