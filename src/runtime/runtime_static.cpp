// The runtime's side of static data: which PE-wide decision is made, and where the
// copies go. The mechanism is in heap/static_data.hpp; the why in docs/static-data.md.
#include "common/log.hpp"
#include "runtime/runtime_impl.hpp"

namespace symmem {

uint64_t Runtime::Impl::attach_static_data(const InitOptions& opts) {
  StaticParams sp;
  sp.rank = rank_;
  sp.npes = npes_;
  sp.job_id = env_.job_id;
  sp.instance = opts.instance;
  sp.enabled = cfg_.static_data;
  sp.timeout_s = cfg_.init_timeout;
  sp.commit_policy = &commit_policy_;
  auto st = StaticData::attach(sp, epoch_store_.get());
  if (!st.ok()) fail(st.status().code(), "init", "%s", st.status().message().c_str());
  static_ = std::move(st).value();
  return static_ ? static_->size() : 0;
}

void Runtime::Impl::map_static_data(const std::vector<uint8_t>& map_pe) {
  if (!static_) return;
  Status s = static_->map_peers(heap_->statics(0), epoch_store_.get(), map_pe);
  if (!s.ok()) fail(s.code(), "init", "%s", s.message().c_str());
  static_start_ = static_->start();
  static_size_ = static_->size();
  static_copies_ = reinterpret_cast<uintptr_t>(heap_->statics(0));
}

}  // namespace symmem
