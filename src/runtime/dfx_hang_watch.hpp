// The PEs' own hang deadline (SYMMEM_HANG_TIMEOUT) when no symmem-run watches the job
// (mpirun, srun, torchrun, a unique id): a thread of the lowest PE of each node looks at
// its node's status pages a few times a second and, once every PE of the node has slept in
// a wait with nothing moving for the deadline, prints the hang report (dfx_hang.hpp) for
// its node and, when its node holds every PE of the job (verdict DEADLOCK), ends the job
// with exit code 124. With PEs on other nodes it cannot see them: it prints the report
// (verdict BLOCKED) once per standstill and lets the job run on. Under symmem-run the
// launcher does all this for the whole job.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace symmem {

class HangWatch {
 public:
  // `impl` is the Runtime::Impl whose node is watched; it outlives this object.
  HangWatch(void* impl, double hang_s);
  ~HangWatch();  // stops the thread
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
