// The rendezvous key-value store of the control path (the gloo model): set / get /
// wait-with-timeout / add, plus a prefix wrapper that namespaces keys. Only bootstrap,
// init-time exchanges and out-of-band test verdicts use it; the data path never does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.hpp"

namespace symmem {

class Store {
 public:
  virtual ~Store() = default;
  virtual Status set(const std::string& key, const std::string& value) = 0;
  // Waits until `key` exists (at most timeout_s seconds), then returns its value.
  virtual Result<std::string> get(const std::string& key, double timeout_s) = 0;
  // Waits until every key exists. On timeout the Status names the missing keys.
  virtual Status wait(const std::vector<std::string>& keys, double timeout_s) = 0;
  // Atomically adds delta to the integer stored at key (absent = 0); returns the new value.
  virtual Result<int64_t> add(const std::string& key, int64_t delta) = 0;
  // Non-blocking: which of `keys` exist now (one bool per key).
  virtual Result<std::vector<bool>> check(const std::vector<std::string>& keys) = 0;
  virtual Status erase(const std::string& key) = 0;
  // Sets key to value unless it exists; returns the value stored now (the first writer's).
  virtual Result<std::string> create(const std::string& key, const std::string& value) = 0;
};

// Namespaces every key as "<prefix>/<key>" on an underlying store it does not own.
class PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, Store& base) : prefix_(std::move(prefix) + "/"), base_(base) {}
  Status set(const std::string& k, const std::string& v) override { return base_.set(prefix_ + k, v); }
  Result<std::string> get(const std::string& k, double t) override { return base_.get(prefix_ + k, t); }
  Status wait(const std::vector<std::string>& keys, double t) override;
  Result<int64_t> add(const std::string& k, int64_t d) override { return base_.add(prefix_ + k, d); }
  Result<std::vector<bool>> check(const std::vector<std::string>& keys) override;
  Status erase(const std::string& k) override { return base_.erase(prefix_ + k); }
  Result<std::string> create(const std::string& k, const std::string& v) override {
    return base_.create(prefix_ + k, v);
  }

 private:
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const;
  std::string prefix_;
  Store& base_;
};

// Control-path collectives over a store. `tag` must be unique per call within a job
// (callers append a sequence number). On timeout the error names the PEs that did not
// arrive, e.g. "PEs 3, 5 of 8 did not arrive at 'init/heap' within 60 s".
Result<std::vector<std::string>> store_allgather(Store& store, const std::string& tag, int rank,
                                                 int n, const std::string& mine, double timeout_s);
// `idle` (when set) runs between short looks at the store while waiting: a PE that must
// keep serving others meanwhile (UCX with no progress thread) does so there.
Status store_barrier(Store& store, const std::string& tag, int rank, int n, double timeout_s,
                     const std::function<void()>& idle = {});

}  // namespace symmem
